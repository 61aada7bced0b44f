"""tmux: type one line into an agent's rostered pane — preflight, stage, submit, confirm.

Typing is the universal fallback and the easiest to get wrong (seed §6), so this
transport is a strict state machine over screen snapshots, and every step records
what it read:

- preflight: the pane must still exist on the tmux server it was rostered on and
  still run the target process (Claude: `#{pane_pid}` is the session pid; Codex: a
  Codex TUI runs under the pane and is tied to the thread by the lock holder, the
  footer's thread name or `resume <uuid>` argv). Copy mode, dialogs, overlays, the
  slash menu, shell mode, a dead pane and ANY text in the composer (an operator's
  draft, even when idle) refuse the send; so does a screen the classifier cannot
  read (fail closed). The whole check runs again immediately before typing.
- stage: the payload goes in as literal bytes, without Enter; snapshots are polled
  until the complete exact payload is in the composer on two polls in a row (Codex
  buffers fast input as a "paste burst" and an Enter inside the burst is swallowed
  as a newline). If it never shows, Enter is NOT pressed and the pane is left alone:
  the delivery stays TYPED ("pending staged").
- submit: the screen is re-classified (receiver state is perishable, and a dialog
  that opened meanwhile would take the Enter as its answer), then one Enter in a
  separate tmux call at least `submit_gap` after the text. Claude busy: that Enter
  queues the text for a tool boundary — never a second Enter, never Tab. Codex busy:
  in 0.169.0 Enter steers into the running turn; Tab is sent once only if, after
  Enter, the payload still sits beside `tab to queue message`. Escape is never sent.
- confirm: receiver evidence only — Claude's transcript gains a typed user record
  (`origin.kind` human, top level or `attachment.queued_command` mid-turn) with the
  payload; Codex's rollout gains an `item_completed` UserMessage whose text is the
  payload, in a new `user` turn or steered into the running one. Screen hints are
  recorded beside it as secondary evidence.

All I/O goes through `PaneIO` (snapshot / send_literal / send_key are the only ways
a key leaves), so a test can wrap it and count every keystroke. Each of those ways,
and `send`/`submit_staged`, takes the gate's approval for this plan (the tmux
transport, this pane, for literal text these exact bytes) and refuses without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict

from relay_repl.agents import agent_for
from relay_repl.agents.kind import AgentKind as Agent
from relay_repl.core import tmux_words
from relay_repl.core.approval import Approval, check
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope, check_typed_line
from relay_repl.core.errors import EnvelopeError, PaneGone, TmuxError
from relay_repl.system.polling import poll_until
from relay_repl.system.tmux import TmuxResult
from relay_repl.system.tmux import run as run_tmux
from relay_repl.agents.screens.capture import new_mark, snapshot_args, snapshot_fields
from relay_repl.agents.screens.model import ScreenReading, Snapshot, SubmitHint
from relay_repl.core.target import Target
from relay_repl.transports.base import Capabilities, Look, StageLog, Transport

if TYPE_CHECKING:
    from relay_repl.transports.registry import TransportContext
from relay_repl.transports.tmux_steps import Action, Decision, Phase, StepContext, decide

T = TypeVar("T")

ALLOWED_KEYS = frozenset({"Enter", "Tab"})
"""The only named keys this transport may ever send. Escape is not among them: it
interrupts a busy receiver (both clients) and, twice, opens Codex's rewind browser."""


class PaneRef(BaseModel):
    """A pane on one tmux server (socket path + pane id)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    socket_path: str
    pane_id: str
    server_label: str = ""

    def __str__(self) -> str:
        return f"{self.pane_id}@{self.socket_path}"


class Baseline(BaseModel):
    """Where receiver evidence will appear and how long that file was before typing."""

    model_config = ConfigDict(defer_build=True)

    path: str | None = None
    offset: int = 0


class TmuxProgress(BaseModel):
    """How far a tmux delivery got, kept in `delivery.extra.tmux` as its JSON dump
    (the ledger stores it; the debugger's fresh process reads it back with `of`).

    Monotonic times (`started`, `typed_at`, ...) mean something only in the process
    that recorded them."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    started: float | None = None
    keys: list[str] = []
    pane: str | None = None
    pane_ref: PaneRef | None = None
    kind_at_preflight: str | None = None
    baseline: Baseline | None = None
    typed_at: float | None = None
    entered_at: float | None = None
    kind_at_submit: str | None = None
    submitted: bool = False
    screen_after_enter: SubmitHint | None = None
    confirmed_at: float | None = None
    latency: float | None = None

    @classmethod
    def of(cls, delivery: Delivery) -> TmuxProgress:
        """The progress recorded on `delivery` (empty if none)."""
        return cls.model_validate(delivery.extra.tmux or {})

    def save(self, delivery: Delivery) -> None:
        """Write back into `delivery.extra.tmux` (call after each change, before logging)."""
        delivery.extra.tmux = self.model_dump(mode="json", exclude_none=True)


class PaneIO:
    """The seam between the transport and tmux (the one runner, `system.tmux`). Blocking.

    Which server: the one discovery rostered the pane on (`detail.tmux_socket`), else
    the first of $RELAY_TMUX_SOCKET, the server of $TMUX and the default server that
    has the pane (the order of `relay_repl.system.panes.tmux_servers`).
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)

    # -- reading --------------------------------------------------------------------
    def _cmd(self, pane: PaneRef, *args: str) -> TmuxResult:
        """One tmux command through the one runner (`system.tmux`); any failure is PaneGone."""
        if not os.path.exists(pane.socket_path):
            raise PaneGone(f"tmux server {pane.socket_path} is gone")
        try:
            res = run_tmux(("-S", pane.socket_path), *args, env=self.env)
        except TmuxError as exc:
            raise PaneGone(f"tmux failed: {exc}") from exc
        if not res.ok:
            err = res.error
            if "can't find" in err or "no server" in err or "No such file" in err or "error connecting" in err:
                raise PaneGone(f"{pane}: {err}")
            raise PaneGone(f"tmux {args[0]} on {pane} failed: {err}")
        return res

    def locate(self, target: Target) -> PaneRef | None:
        """The rostered pane of `target` on the server that owns it, or None if gone."""
        if not target.pane:
            return None
        from relay_repl.system.panes import tmux_servers

        rostered = target.tmux_socket
        candidates: list[tuple[str, str]] = []
        if rostered:
            candidates.append((rostered, target.tmux_server or "rostered"))
        else:
            candidates += [(s.socket_path, s.label) for s in tmux_servers(self.env)]
        for sock, label in candidates:
            ref = PaneRef(socket_path=sock, pane_id=target.pane, server_label=label)
            try:
                out = self._cmd(ref, "display-message", "-p", "-t", target.pane, "#{pane_id}")
            except PaneGone:
                continue
            if out.stdout and out.stdout[0].strip() == target.pane:
                return ref
        return None

    def snapshot(self, pane: PaneRef) -> Snapshot:
        """Formats, the plain rows and the `-e` rows, in ONE tmux invocation (agents/screens/capture.py,
        the one home of that command line, which a send's plain pre-plan path runs too).

        tmux runs a `;`-chained command list without redrawing in between, so the
        three reads describe the same screen.
        """
        mark = new_mark()
        res = self._cmd(pane, *snapshot_args(pane.pane_id, mark))
        fields = snapshot_fields(list(res.stdout), mark)
        if fields is None:
            raise PaneGone(f"{pane}: unreadable capture")
        return Snapshot(**fields)

    def processes(self, root: int) -> list[tuple[int, list[str]]]:
        """`root` and its descendants with their argv (the pane's process tree)."""
        from relay_repl.system.proc import descendants, process_table, read_cmdline

        table = process_table()
        return [(pid, read_cmdline(pid) or []) for pid in descendants(root, table)]

    # -- the only ways a key leaves -----------------------------------------------------
    def send_literal(self, pane: PaneRef, text: str, approval: Approval | None = None,
                     part: tuple[int, int] | None = None) -> None:
        """`send-keys -l -- text`: the bytes as typed, no key names, no Enter; only the
        approved payload, into the approved target's pane. `part=(a, b)` types `text[a:b]`
        alone (the approval still names the whole payload): a receiver that reads a burst of
        keys against its composer as last drawn gets its first character on its own."""
        check(approval, what=f"typing into pane {pane.pane_id}", transport=TmuxTransport.name, payload=text,
              pane=pane.pane_id)
        self._cmd(pane, "send-keys", "-t", pane.pane_id, "-l", "--", text if part is None else text[part[0]:part[1]])

    def send_key(self, pane: PaneRef, key: str, approval: Approval | None = None) -> None:
        """One named key, from a fixed allow-list (Enter, Tab). Escape is refused; so is a
        key without an approval for a tmux plan to this pane."""
        if key not in ALLOWED_KEYS:
            raise ValueError(f"refusing to send key {key!r}: only {sorted(ALLOWED_KEYS)} are ever sent")
        check(approval, what=f"{key} into pane {pane.pane_id}", transport=TmuxTransport.name, pane=pane.pane_id)
        self._cmd(pane, "send-keys", "-t", pane.pane_id, key)


# -- receiver evidence ------------------------------------------------------------------------


def _file_size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path else 0
    except OSError:
        return 0


TORN_REREADS = 3
"""How many more captures preflight takes of a screen it did not recognise (no composer where one must
be), a poll apart, before it refuses: a capture taken mid-redraw is not the screen."""


class TmuxTransport(Transport):
    name = tmux_words.NAME
    capabilities = Capabilities(live_only=True, needs_pane=True)
    relies_on: ClassVar[str | None] = "the screen classifiers and typed-line evidence records were"

    @classmethod
    def from_context(cls, ctx: TransportContext) -> TmuxTransport:
        """The `relay_repl.transports` entry point's factory."""
        return cls()

    def __init__(
        self,
        io: PaneIO | None = None,
        *,
        stage_timeout: float = 5.0,
        poll: float = 0.025,
        submit_gap: float = 0.05,
        settle: float = 2.0,
        tab_after: float = 1.0,
        confirm_poll: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        poll_max: float = 0.1,
        confirm_poll_max: float = 0.2,
    ) -> None:
        self.io = io or PaneIO()
        self.stage_timeout = stage_timeout
        # Screen and evidence polls start short and grow by half up to the *_max: a typed
        # line is usually on screen within tens of ms and in the rollout/transcript within a
        # few hundred, so a fixed 100/200 ms poll added half its interval to every delivery
        # on average (issue 20); the growth keeps a long wait to a few captures per second.
        # Enter still never comes sooner than `submit_gap` after the text (decide's delay).
        self.poll = poll
        self.poll_max = max(poll_max, poll)
        self.confirm_poll_max = max(confirm_poll_max, confirm_poll)
        self.submit_gap = max(submit_gap, 0.05)  # never closer than 50 ms (Codex paste burst)
        self.settle = settle
        self.tab_after = tab_after
        self.confirm_poll = confirm_poll
        self.clock = clock

    # -- plan ------------------------------------------------------------------------
    @staticmethod
    def _agent(target: Target) -> tuple[Agent | None, ModuleType | None]:
        """The target's agent and its screen classifier (either may be None: then never type)."""
        agent = agent_for(target.kind)
        return agent, agent.screen.classifier() if agent else None

    def refusal(self, target: Target) -> str | None:
        base = super().refusal(target)
        if base:
            return base
        if self._agent(target)[1] is None:
            return tmux_words.no_classifier(target.kind)
        return None

    def plan_notes(self, target: Target) -> tuple[str, ...]:
        agent = agent_for(target.kind)
        return tmux_words.plan_notes(agent.screen.tmux_busy_note(target) if agent else None)

    async def before_asking(self, target: Target) -> tuple[str | None, str | None]:
        """The pane as it is now, for the plan (issue 39: a composer holding the operator's draft was
        asked about, then refused only after the y): its screen and composer in the plan's notes, and
        preflight's own refusal before the question. Reads the pane (capture-pane), types nothing."""
        agent, cls = self._agent(target)
        if agent is None or cls is None or not target.pane:
            return None, None  # `send` refuses it with its reason; nothing to look at here
        try:
            pane = await self._io(self.io.locate, target)
        except TmuxError:
            return None, None
        if pane is None:
            return None, tmux_words.pane_gone(target.pane)
        snap, reading, why = await self._check(target, pane, cls)
        if reading is None:
            return None, why
        return tmux_words.now_note(pane.pane_id, reading), why

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        agent = agent_for(target.kind)
        return agent.evidence.tmux_delivered_when() if agent else "nothing: no agent knows this kind, so nothing is typed"

    # -- helpers ---------------------------------------------------------------------
    def _ctx(self, agent: Agent, cls: ModuleType, payload: str) -> StepContext:
        """The pure decision rules' inputs that do not change from poll to poll."""
        return StepContext(payload=payload, screen=cls, stage_timeout=self.stage_timeout, submit_gap=self.submit_gap,
                           settle=self.settle, tab_after=self.tab_after,
                           tab_queues_when_busy=agent.screen.tab_queues_when_busy, busy_submit=agent.screen.busy_submit)

    async def _io(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    async def _snap(self, pane: PaneRef) -> Snapshot | None:
        try:
            return await self._io(self.io.snapshot, pane)
        except PaneGone:
            return None

    async def _roster(self, target: Target, snap: Snapshot, cls: ModuleType) -> str | None:
        """Why this pane no longer runs the target process, or None (the agent's roster rule)."""
        agent = agent_for(target.kind)
        if agent is None:
            return f"no agent knows kind {target.kind!r}"
        return await self._io(agent.screen.roster_mismatch, target, snap, self.io.processes, cls)

    async def _check(self, target: Target, pane: PaneRef, cls: ModuleType
                     ) -> tuple[Snapshot | None, ScreenReading | None, str | None]:
        """One preflight reading: (snapshot, reading, refusal or None)."""
        snap = await self._snap(pane)
        if snap is None:
            return None, None, f"pane {pane} is gone"
        reading: ScreenReading = cls.classify(snap)
        for _ in range(TORN_REREADS):
            # A client that redraws its screen (a spinner, a status line) is sometimes captured mid-redraw,
            # its composer half drawn: look again a moment later before calling it unrecognised. Only looks
            # (capture-pane); a screen still unrecognised after these is refused as before (fail closed).
            if "no-composer" not in reading.blockers:
                break
            await anyio.sleep(max(self.poll_max, 0.05))
            again = await self._snap(pane)
            if again is None:
                return None, None, f"pane {pane} is gone"
            snap, reading = again, cls.classify(again)
        refused = tmux_words.screen_refusal(reading, await self._roster(target, snap, cls))
        if refused:
            return snap, reading, refused
        agent = agent_for(target.kind)
        waiting = await self._io(agent.screen.waiting_refusal, target) if agent else None
        if waiting:
            return snap, reading, waiting
        return snap, reading, None

    @staticmethod
    def _ev(snap: Snapshot | None, reading: ScreenReading | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if snap is not None:
            out["capture"] = snap.excerpt()
            out["screen"] = snap.meta()
        if reading is not None:
            out["reading"] = reading.model_dump()
        return out

    def _refuse(self, delivery: Delivery, log: StageLog, stage: str, why: str, **data: Any) -> None:
        delivery.reason = why
        log(stage, DeliveryState.REFUSED, why, keys_sent=0, **data)

    def _baseline(self, target: Target) -> Baseline:
        """Where receiver evidence will appear (the agent says), and how far the file was before we typed."""
        agent = agent_for(target.kind)
        path = agent.evidence.evidence_file(target) if agent else None
        return Baseline(path=str(path) if path else None, offset=_file_size(path))

    # -- send --------------------------------------------------------------------------
    async def send(self, delivery: Delivery, target: Target, payload: str, log: StageLog, *,
                   approval: Approval | None = None) -> None:
        self.require(approval, target, payload, f"typing into {target.spec}'s pane")
        tm = TmuxProgress(started=self.clock())
        tm.save(delivery)
        agent, cls = self._agent(target)
        if agent is None or cls is None:
            self._refuse(delivery, log, "preflight", f"no screen classifier for {target.kind!r}")
            return
        try:
            check_typed_line(payload, agent.screen.ui_mode_chars())  # the receiver's own UI-mode characters
        except EnvelopeError as exc:
            self._refuse(delivery, log, "preflight", str(exc))
            return
        pane = await self._io(self.io.locate, target)
        if pane is None:
            self._refuse(delivery, log, "preflight", tmux_words.pane_gone(target.pane))
            return
        tm.pane, tm.pane_ref = str(pane), pane
        tm.save(delivery)

        # preflight
        snap, reading, why = await self._check(target, pane, cls)
        if why:
            self._refuse(delivery, log, "preflight", why, **self._ev(snap, reading))
            return
        assert snap is not None and reading is not None
        tm.kind_at_preflight = reading.kind
        tm.save(delivery)
        log("preflight", DeliveryState.PLANNED,
            f"pane {pane.pane_id} runs the target; {reading.kind}, composer empty, no blockers",
            pane=str(pane), **self._ev(snap, reading))
        tm.baseline = await self._io(self._baseline, target)
        tm.save(delivery)

        # re-check immediately before typing
        snap, reading, why = await self._check(target, pane, cls)
        if why:
            self._refuse(delivery, log, "recheck", f"changed since preflight: {why}", **self._ev(snap, reading))
            return
        assert snap is not None and reading is not None

        # stage
        log.checkpoint("stage (typing the payload)")
        try:
            lead = min(agent.screen.tmux_lead, len(payload) - 1)
            # the receiver's own rule (its package): these characters one at a time, each seen drawn, first
            for i in range(lead):
                await self._io(self.io.send_literal, pane, payload, approval, (i, i + 1))
                tm.keys.append("lead")
                if not await self._lead_drawn(pane, cls, payload[:i + 1]):
                    delivery.reason = (f"pending staged: the first {i + 1} character(s) of the payload did not show in "
                                       "the composer within 5s; the rest NOT typed, Enter NOT pressed, pane left as is "
                                       "(look at it before any retry)")
                    tm.save(delivery)
                    log("stage", DeliveryState.TYPED, delivery.reason)
                    return
            if lead > 0:
                await self._io(self.io.send_literal, pane, payload, approval, (lead, len(payload)))
            else:
                await self._io(self.io.send_literal, pane, payload, approval)
        except PaneGone as exc:
            log.fail("stage", f"could not type into {pane}: {exc}")
            return
        t_lit = self.clock()
        tm.keys.append("literal")
        tm.typed_at = t_lit
        tm.save(delivery)
        ctx = self._ctx(agent, cls, payload)
        last: Snapshot | None = snap

        async def staged() -> Decision | None:
            """The stage's end (gone, staged or hold), or None while the payload is still landing."""
            nonlocal ctx, last
            cur = await self._snap(pane)
            d = decide(Phase.STAGE, cur, None, self.clock() - t_lit, ctx)
            if d.action is Action.GONE:
                return d
            last = cur
            if d.action in (Action.STAGED, Action.HOLD):
                return d
            ctx = replace(ctx, visible_before=d.visible)
            return None

        await anyio.sleep(self.poll)  # the first look once the keys had a moment to land
        # no deadline of its own: decide() holds the stage once the payload is late (its rules' limit)
        # growing only to twice the first interval: the payload usually shows ~75 ms after the
        # keys (lab trace) and must then show on a second poll, which should not come late
        d = await poll_until(staged, timeout=math.inf, interval=self.poll, clock=self.clock,
                             max_interval=2 * self.poll)
        assert d is not None
        if d.action is Action.GONE:
            delivery.reason = f"pane {pane} vanished after the payload was typed; Enter not pressed"
            log("stage", DeliveryState.TYPED, delivery.reason, **self._ev(last, None))
            return
        if d.action is Action.HOLD:
            delivery.reason = d.reason
            log("stage", DeliveryState.TYPED, delivery.reason, **self._ev(last, d.reading))
            return
        log("stage", DeliveryState.TYPED, d.reason,
            waited=round(self.clock() - t_lit, 3), recheck=reading.summary(), **self._ev(last, cls.classify(last)))

        await self._submit(delivery, target, pane, cls, payload, log, t_lit, approval)

    async def _lead_drawn(self, pane: PaneRef, cls: ModuleType, lead: str) -> bool:
        """True once the receiver's composer shows `lead` (the characters typed alone), within 5 s."""

        async def drawn() -> bool | None:
            snap = await self._snap(pane)
            if snap is None:
                return None
            return True if (cls.classify(snap).composer_text or "").startswith(lead) else None

        return bool(await poll_until(drawn, timeout=5.0, interval=self.poll, clock=self.clock))

    async def submit_staged(self, delivery: Delivery, target: Target, payload: str, log: StageLog, *,
                            approval: Approval | None = None) -> None:
        """The submit stage alone, for a delivery left TYPED (the debugger's step): the same
        re-classification and one Enter as in `send`, on the pane the payload was typed into,
        under the approval the debugger's own plan got."""
        self.require(approval, target, None, f"submitting into {target.spec}'s pane", delivery)
        tm = TmuxProgress.of(delivery)
        tm.save(delivery)
        cls = self._agent(target)[1]
        ref = tm.pane_ref
        if cls is None or ref is None:
            delivery.reason = "no record of the pane the payload was typed into; Enter NOT pressed"
            log("submit", DeliveryState.TYPED, delivery.reason)
            return
        tm.started = self.clock()  # this process's clock: the sender's monotonic time means nothing here
        tm.save(delivery)
        await self._submit(delivery, target, ref, cls, payload, log, None, approval)

    async def _submit(self, delivery: Delivery, target: Target, pane: PaneRef, cls: ModuleType, payload: str,
                      log: StageLog, t_lit: float | None, approval: Approval | None) -> None:
        """Re-classify, then one Enter in its own tmux call (never beside the text)."""
        tm = TmuxProgress.of(delivery)
        agent = agent_for(target.kind)
        assert agent is not None  # a classifier came from it
        # submit: re-classify first
        before = await self._snap(pane)
        elapsed = self.clock() - t_lit if t_lit is not None else math.inf
        d = decide(Phase.SUBMIT, before, None, elapsed, self._ctx(agent, cls, payload))
        r = d.reading
        if d.action is not Action.ENTER:
            delivery.reason = d.reason
            log("submit", DeliveryState.TYPED, delivery.reason, **self._ev(before, r))
            return
        assert before is not None and r is not None
        if d.delay > 0:
            await anyio.sleep(d.delay)
        log.checkpoint("submit (Enter)")
        try:
            await self._io(self.io.send_key, pane, "Enter", approval)
        except PaneGone as exc:
            delivery.reason = f"Enter could not be sent ({exc}); payload left staged"
            log("submit", DeliveryState.TYPED, delivery.reason)
            return
        t_enter = self.clock()
        tm.keys.append("Enter")
        tm.entered_at = t_enter
        tm.kind_at_submit = r.kind
        tm.submitted = True
        tm.save(delivery)
        log("submit", DeliveryState.SUBMITTED, d.reason,
            since_literal=round(t_enter - t_lit, 3) if t_lit is not None else None, **self._ev(before, r))
        await self._after_enter(delivery, agent, pane, cls, before, payload, log, r.kind, approval)

    async def _after_enter(self, delivery: Delivery, agent: Agent, pane: PaneRef, cls: ModuleType,
                           before: Snapshot, payload: str, log: StageLog, kind: str, approval: Approval | None) -> None:
        """Watch the screen briefly after Enter; Codex busy may earn exactly one Tab."""
        tm = TmuxProgress.of(delivery)
        assert tm.entered_at is not None
        t_enter = tm.entered_at
        hint: SubmitHint | None = None
        ctx = replace(self._ctx(agent, cls, payload), before=before)
        seen: Snapshot | None = None

        async def watch() -> bool | None:
            """True once the screen settled it (done, or the pane gone), else None (keep watching)."""
            nonlocal ctx, hint, seen
            after = await self._snap(pane)
            d = decide(Phase.AFTER_ENTER, after, None, self.clock() - t_enter, ctx)
            if d.action is Action.GONE:
                return True
            seen = after
            hint = d.hint
            if d.action is Action.DONE:
                return True
            if d.action is Action.TAB:
                log.checkpoint("submit (Tab)")
                await self._io(self.io.send_key, pane, "Tab", approval)
                tm.keys.append("Tab")
                tm.save(delivery)
                log("submit", DeliveryState.SUBMITTED, d.reason, **self._ev(after, d.reading))
                ctx = replace(ctx, tabbed=True, before=after)
            return None

        if self.clock() - t_enter < self.settle:
            await anyio.sleep(self.poll)  # the first look once Enter had a moment to act
            await poll_until(watch, timeout=self.settle - (self.clock() - t_enter), interval=self.poll,
                             clock=self.clock, max_interval=self.poll_max)
        if hint is None:
            return
        tm.screen_after_enter = hint
        tm.save(delivery)
        if hint.payload_in_composer and not hint.composer_emptied:
            delivery.reason = ("Enter was pressed but the payload is still in the composer; not pressed again "
                               "(a second Enter could double-send): look at the pane")
        log("screen", DeliveryState.SUBMITTED, "after Enter: " + ("; ".join(hint.reasons) or "no change seen"),
            hint=hint.model_dump(), **self._ev(seen, None))

    def refused_before_side_effect(self, delivery: Delivery) -> bool:
        """Refused at preflight or the re-check: no key was sent."""
        return delivery.state is DeliveryState.REFUSED and delivery.stage in ("preflight", "recheck")

    # -- look (read-only) ---------------------------------------------------------------
    async def look(self, delivery: Delivery, target: Target, payload: str) -> Look:
        """The pane now with the classifier's verdict and its reasons, and whether the
        receiver's transcript/rollout carries the payload. Sends no key."""
        tm = TmuxProgress.of(delivery)
        agent, cls = self._agent(target)
        if agent is None or cls is None:
            return Look(transport=self.name, verdict=f"no screen classifier for {target.kind!r}")
        pane = tm.pane_ref or await self._io(self.io.locate, target)
        path, offset = await self._io(self._evidence_path, target, tm.baseline or Baseline())
        ev = await self._io(agent.evidence.typed_evidence, path, offset, payload) if path else None
        hits = ev.records if ev else []
        landed: bool | None = ev.landed if ev else None
        data: dict[str, Any] = {"evidence file": str(path) if path else "none found"}
        snap = await self._snap(pane) if pane is not None else None
        if snap is None:
            return Look(transport=self.name, receiver="moved", landed=landed, records=hits, data=data,
                        verdict=f"the pane {tm.pane or target.pane} is gone from its tmux server")
        reading = cls.classify(snap)
        staged = cls.payload_visible(snap, payload)
        roster = await self._roster(target, snap, cls)
        reasons = [f"classifier: {reading.summary()}", *reading.reasons]
        if roster:
            reasons.insert(0, f"roster: {roster}")
        if landed:
            verdict = f"landed: the receiver's {agent.evidence.evidence_name} carries the payload"
        elif staged:
            verdict = "staged, not submitted: the exact payload sits in the composer and the receiver has not taken it"
        elif ev is not None and ev.state == "enqueued":
            verdict = "enqueued by the receiver (queue-operation), not yet in a turn"
        elif landed is False:
            verdict = ("not in the composer and not in the receiver's evidence: the typed bytes may still be waiting "
                       "in the terminal (a stalled client), or were lost; look again before doing anything")
        else:
            verdict = "the payload is not in the composer, and the receiver's evidence file cannot be read"
        data.update({"pane": str(pane), "screen": reading.kind, "composer": reading.composer,
                     "composer text": reading.composer_text, "blockers": ", ".join(reading.blockers) or "none"})
        return Look(transport=self.name, receiver="moved" if roster else "present", landed=landed, staged=staged,
                    verdict=verdict, reasons=reasons, capture=snap.excerpt(), records=hits, data=data)

    # -- confirm ------------------------------------------------------------------------
    async def confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float) -> None:
        tm = TmuxProgress.of(delivery)
        if not tm.submitted:
            return
        base = tm.baseline or Baseline()
        agent = agent_for(target.kind)
        enqueued = False
        path: Path | None = None

        async def check() -> Any:
            nonlocal enqueued, path
            path, offset = await self._io(self._evidence_path, target, base)
            ev = await self._io(agent.evidence.typed_evidence, path, offset, payload) if path and agent else None
            if ev is not None and ev.state == "enqueued" and not enqueued:
                enqueued = True
                log("confirm", DeliveryState.QUEUED, ev.detail, **ev.data)
            return ev if ev is not None and ev.state in ("confirmed", "mismatch") else None

        def progress(left: float) -> None:
            log.progress(f"waiting for {target.spec}'s {agent.evidence.evidence_name if agent else 'evidence'} "
                         f"to show the typed line ({left:.0f}s left)")

        ev = await poll_until(check, timeout=timeout, interval=self.confirm_poll, clock=self.clock,
                              max_interval=self.confirm_poll_max,
                              progress=progress)
        if ev is not None and ev.state == "confirmed":
            await self._confirmed(delivery, target, payload, log, tm, ev.detail, **ev.data)
        elif ev is not None:
            log("confirm", DeliveryState.UNKNOWN, ev.detail, **ev.data)
        else:
            snap = await self._snap(tm.pane_ref) if tm.pane_ref else None
            delivery.reason = (f"Enter pressed, but no receiver evidence after {timeout:.0f}s "
                               f"({'enqueued, not yet taken' if enqueued else 'nothing in the transcript/rollout'}); "
                               "inspect the pane before any retry — never re-send blind")
            log("confirm", DeliveryState.SUBMITTED, delivery.reason, evidence_file=str(path), **self._ev(snap, None))

    def _evidence_path(self, target: Target, base: Baseline) -> tuple[Path | None, int]:
        """The evidence file now and the offset to read from (0 if it changed or appeared)."""
        now = self._baseline(target).path
        if now is None:
            return None, 0
        if base.path and now == base.path:
            return Path(now), base.offset
        return Path(now), 0

    async def _confirmed(self, delivery: Delivery, target: Target, payload: str, log: StageLog,
                         tm: TmuxProgress, detail: str, **data: Any) -> None:
        tm.confirmed_at = self.clock()
        tm.latency = round(tm.confirmed_at - (tm.started if tm.started is not None else tm.confirmed_at), 3)
        tm.save(delivery)
        screen: dict[str, Any] = {}
        if tm.pane_ref:
            snap = await self._snap(tm.pane_ref)
            cls = self._agent(target)[1]
            if snap is not None and cls is not None:
                r = cls.classify(snap)
                screen = {"screen_now": r.summary(), "capture": snap.excerpt(8)}
        log("confirm", DeliveryState.IN_TURN, f"{detail} ({tm.latency:.2f}s after send began)", **data, **screen)
