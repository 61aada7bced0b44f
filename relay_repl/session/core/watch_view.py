"""`relay watch` / `await session.watch()`: the full-screen, read-only view of the conversation.

What it shows (session/core/watch.py holds it): the targets (state, pane, host), the deliveries in
flight with their stage and last evidence (and the last few finished), the held agent
requests (issue 31), the inbox, and the newest ledger events with their
sequence numbers and times to the millisecond.

How it stays current without polling: a `LedgerFollower` sleeps on inotify until the ledger
(or its -wal) changes, then reads only the rows after the last ones shown and redraws. Targets
are discovered again after a batch (at most every `TARGETS_MIN` s) and every `TARGETS_EVERY` s
(an agent turning busy writes nothing to the ledger), or on `r`.

Keys: ↑/↓ (k/j) choose a delivery; Enter (or d) opens it in the debugger: its stages and a
fresh look at the receiver, read-only (nothing is sent, nothing is recorded; `relay debug ID`
steps it); l looks again; Esc closes it; r refreshes the targets; q (or Ctrl-C) quits.
Tab moves the choice to the held agent requests (↑/↓ then choose among them).

Deciding a held request from the view (a approves, x denies the chosen one): the view leaves
the screen (prompt_toolkit's `in_terminal`) and the decision is the ordinary one, made by a
session that may write (`decide`, given by the front end: the REPL's own session, or for
`relay watch` one made like `relay approve`'s): `approve_request` prints the four-part plan
and its gate asks y then Enter; `deny_request` after an optional reason (Esc keeps it held).
A key press in the view approves nothing: only the gate's y on the plan it printed does.
Then the view comes back and shows the request's new state (decided lately, below the held).
Everything else stays read-only; without a `decide` the keys say to use `relay approve ID`.
prompt_toolkit is imported here only, when the view opens, never on the start-up path.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio

from relay_repl.core.controls import visible
from relay_repl.core.errors import RelayError
from relay_repl.session.core.follow import LedgerFollower
from relay_repl.session.core.gate import ApproveFn
from relay_repl.session.core.hooks import Echo, RunHooks
from relay_repl.session.core.watch import REQUESTS_NOTE, REQUESTS_SHOWN, WatchModel, clock
from relay_repl.store.ledger import Ledger

TARGETS_EVERY = 10.0
TARGETS_MIN = 5.0
TAIL = 300  # events read when the view opens (plus every send still open, however old)
HELP = ("↑/↓ choose · Tab deliveries/requests · Enter debugger · l look again · Esc close · a approve · x deny "
        "· r refresh targets · q quit")
REQUEST_KEYS = ("a: approve the chosen (>) request: its plan, then y and Enter, as `relay approve` · x: deny it "
                "(a reason is asked) · Tab, ↑/↓: choose")

Decide = Callable[[bool], AbstractAsyncContextManager[Any]]
"""`decide(listen)`: a session that may write and whose gate asks on the terminal, for one decision
(`listen`: its inbox open for the answer to an approved request; a denial needs none)."""


def initial(path: Path) -> tuple[LedgerFollower, list[Any], list[Any]]:
    """The follower after the newest rows, and what the view starts with: the last TAIL events,
    every event of each send still open (however old), and the inbox since the tail began."""
    follower, first = LedgerFollower.from_tail(path, TAIL)
    events = {e.seq: e for e in first.events}
    if path.exists():
        led = Ledger.read_only_at(path)
        try:
            older = [e for key in led.unfinished_deliveries() for e in led.events(delivery=key)]
            from relay_repl.store.requests import held_requests

            for req in held_requests(led):  # every request still held, however old
                older += led.events(relay_id=req.id, kind="request")
        finally:
            led.close()
        for e in older:  # one written since the tail was read is the follower's first new row, not shown twice
            if e.seq <= follower.since_event:
                events.setdefault(e.seq, e)
    return follower, [events[k] for k in sorted(events)], list(first.inbox)



class ToTerminal(RunHooks):
    """While a request is decided from the view: the deciding session's gate prints its plan and its
    answer lines, and the session its progress lines, to the terminal itself (`real`), not to the
    REPL's patched stdout, whose output would wait until the view is back (after the y/N)."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, line: str) -> None:
        print(line, file=self.real, flush=True)

    def approver(self, approve: ApproveFn) -> ApproveFn:
        to = getattr(approve, "writing_to", None)  # a gate that prints (TerminalGate) is told where
        return to(self.write) if callable(to) else approve

    def echo(self, echo: Echo | None) -> Echo | None:
        return self.write if echo is not None else None

class WatchView:
    """The view over one session (its discovery and debugger) and one ledger file (read-only)."""

    def __init__(self, session: Any, path: Path, decide: Decide | None = None) -> None:
        self.session = session
        self.path = path
        self.decide = decide
        self.model = WatchModel()
        self.selected = 0
        self.focus = "deliveries"  # or "requests": where ↑/↓ move the choice
        self.req_selected = 0
        self.req_choice: str | None = None  # the held request marked > (kept by id: others come and go around it)
        self.deciding: str | None = None  # the request being decided off the screen
        self.debug_text: str | None = None
        self.debug_ref: str | None = None
        self.status = ""
        self._refresh_wanted = anyio.Event()
        self._last_refresh = 0.0
        self.app: Any = None

    # -- drawing ----------------------------------------------------------------------------
    def _size(self) -> tuple[int, int]:
        try:
            size = self.app.output.get_size()
            return size.rows, size.columns
        except Exception:
            return 50, 160

    def fragments(self) -> list[tuple[str, str]]:
        rows, width = self._size()
        m = self.model
        out: list[tuple[str, str]] = []

        def line(text: str, style: str = "") -> None:
            out.append((style, visible(text)[: width - 1] + "\n"))

        head = f" relay watch — {self.path} — {HELP}"
        line(head.ljust(width - 1), "reverse")
        if m.halt:
            line(f" HALTED: {m.halt}", "bold fg:ansired")
        used = 2
        line("TARGETS" + (f"  ({m.targets_problem})" if m.targets_problem else ""), "bold")
        for t in m.target_lines():
            line("  " + t)
        used += 1 + len(m.target_lines())
        rows_d = m.deliveries()
        dl = m.delivery_lines(width - 3)
        line(f"DELIVERIES  ({sum(1 for r in rows_d if not r.finished)} in flight; · finished)", "bold")
        if rows_d:
            self.selected = max(0, min(self.selected, len(rows_d) - 1))
        cap = max(rows // 3, 4)  # rows of deliveries shown; the window follows the chosen one
        first = max(0, min(self.selected - cap // 2, len(rows_d) - cap))
        shown = [(0, dl[0])] + [(i, t) for i, t in enumerate(dl[1:], 1) if first < i <= first + cap] if rows_d else \
            list(enumerate(dl))
        for i, text in shown:
            chosen = bool(rows_d) and i - 1 == self.selected
            line(("> " if chosen else "  ") + text, "reverse" if chosen else ("bold" if i == 0 else ""))
        if rows_d and len(rows_d) > cap:
            line(f"  ({len(rows_d) - cap} more: ↑/↓)")
            used += 1
        used += 1 + len(shown)
        requests = m.request_lines(width - 3)
        line("HELD AGENT REQUESTS" + (f"  ({REQUEST_KEYS})" if requests else ""), "bold")
        self._choose(self._req_index())
        first_r = max(0, min(self.req_selected - REQUESTS_SHOWN // 2, len(requests) - REQUESTS_SHOWN))
        for i, text in list(enumerate(requests))[first_r:first_r + REQUESTS_SHOWN]:
            chosen = i == self.req_selected
            line(("> " if chosen else "  ") + text, "reverse" if chosen and self.focus == "requests" else "")
        if not requests:
            line("  " + REQUESTS_NOTE)
        if len(requests) > REQUESTS_SHOWN:
            line(f"  ({len(requests) - REQUESTS_SHOWN} more: ↑/↓ after Tab; session.requests, relay requests)")
        decided = m.decided_lines(width - 3)
        for text in decided:
            line("  " + text)
        used += 1 + max(1, min(len(requests), REQUESTS_SHOWN)) + (len(requests) > REQUESTS_SHOWN) + len(decided)
        if self.debug_text is not None:
            line(f"DEBUGGER  {self.debug_ref}  (read-only: nothing is sent or recorded; `relay debug "
                 f"{self.debug_ref}` steps it; l looks again, Esc closes)", "bold fg:ansiblue")
            for text in self.debug_text.splitlines()[: max(rows - used - 2, 3)]:
                line("  " + text)
            return out
        left = max(rows - used - 3, 4)
        n_inbox = min(6, max(2, left // 3))
        line("INBOX", "bold")
        for text in m.inbox_lines(n_inbox, width - 3):
            line("  " + text)
        line("EVENTS (newest last)", "bold")
        n_events = max(left - n_inbox - 1, 2)
        for text in list(m.events)[-n_events:]:
            line("  " + text)
        if self.status:
            line(self.status, "italic")
        return out

    def invalidate(self) -> None:
        if self.app is not None:
            self.app.invalidate()

    # -- work in the background ---------------------------------------------------------------
    async def _targets(self) -> None:
        while True:
            with anyio.move_on_after(TARGETS_EVERY):
                await self._refresh_wanted.wait()
            asked = self._refresh_wanted.is_set()
            self._refresh_wanted = anyio.Event()
            if asked and time.monotonic() - self._last_refresh < TARGETS_MIN:
                continue  # discovered moments ago: the next tick (or batch) discovers again
            self._last_refresh = time.monotonic()
            problem = None
            try:
                found = list(await self.session.refresh())
            except RelayError as exc:
                found, problem = list(self.model.targets), str(exc)
            try:  # a hosts.toml relay cannot read is one line here too, the local targets still listed
                hosts = getattr(getattr(getattr(self.session, "sender", None), "remote", None), "hosts", None)
                if hosts:  # `relay hosts`: each host's relay lists its own (a host that fails is one line)
                    remote, problems = await hosts.all_targets()
                    found += remote
                    problem = "; ".join([*([problem] if problem else []), *problems]) or None
            except RelayError as exc:
                problem = "; ".join([*([problem] if problem else []), str(exc)])
            self.model.set_targets(found, problem)
            self.invalidate()

    async def _follow(self, follower: LedgerFollower) -> None:
        async for batch in follower.follow():
            self.model.apply(batch.events, batch.inbox)
            if self.debug_ref and any(e.relay_id == self.debug_ref or e.delivery == self.debug_ref
                                      for e in batch.events):
                await self._open_debugger(self.debug_ref, look=False)
            self._refresh_wanted.set()
            self.invalidate()

    def _fresh_ledger(self) -> None:
        """A read-only session ledger opened before the rows it must find (missing then, or `immutable`
        with no -wal beside it) never sees them: the debugger reads through a fresh read-only handle."""
        old = self.session.ledger
        if getattr(old, "read_only", False):
            self.session.shared.ledger = Ledger.read_only_at(self.path)
            old.close()

    async def _open_debugger(self, ref: str, look: bool = True) -> None:
        self.debug_ref = ref
        try:
            self._fresh_ledger()
            dbg = self.session.debugger(ref)
            text = dbg.table()
            if look:
                self.debug_text = text + "\n\nlooking at the receiver (read-only) …"
                self.invalidate()
                lk = await dbg.look(record=False)
                self._look = lk.render()
            text += "\n\nlook: " + getattr(self, "_look", "(none yet)")
        except RelayError as exc:
            text = f"cannot open {ref}: {exc}"
        self.debug_text = visible(text, keep_newlines=True)
        self.invalidate()

    # -- deciding a held request, off the screen ---------------------------------------------------
    def _held_ids(self) -> list[str]:
        return [str(r["id"]) for r in self.model.held_requests()]

    def _req_index(self, move: int = 0) -> int:
        """The index of the request marked > (by its id; where it was when it left), moved by `move`."""
        ids = self._held_ids()
        at = ids.index(self.req_choice) if self.req_choice in ids else self.req_selected
        return max(0, min(at + move, len(ids) - 1))

    def _choose(self, index: int) -> None:
        ids = self._held_ids()
        self.req_selected = index
        self.req_choice = ids[index] if ids else None

    def chosen_request(self) -> str | None:
        """The request the screen marks > now; None when there is none or it left since it was drawn (a
        key acts only on the request the operator saw chosen; the next drawing marks another)."""
        return self.req_choice if self.req_choice in self._held_ids() else None

    async def decide_request(self, approve: bool) -> None:
        """The chosen held request decided the ordinary way, with the view off the screen (module doc)."""
        rid = self.chosen_request()
        if rid is None:
            self.status = ("no held request to decide" if not self._held_ids() else
                           f"request {self.req_choice} is no longer held: the one now marked > is chosen; press again")
            return self.invalidate()
        if self.decide is None:
            self.status = (f"this view cannot decide requests: `relay {'approve' if approve else 'deny'} {rid}` "
                           "in a terminal does")
            return self.invalidate()
        if self.deciding is not None:
            return
        from prompt_toolkit.application import in_terminal
        from prompt_toolkit.application.current import set_app

        self.deciding = rid
        # the terminal itself, not the REPL's patched stdout: that proxy writes through the running app, whose
        # output waits until the view is back, so the plan would show only after its y/N (seen in the REPL).
        # The view's lines are printed there, and the session's (its gate's plan, its progress) reach it
        # through the hooks of the deciding session (`ToTerminal`), never by replacing sys.stdout.
        real = sys.__stdout__ if sys.__stdout__ is not None else sys.stdout
        try:
            with set_app(self.app):
                async with in_terminal():
                    self.status = await self._decide_in_terminal(rid, approve, real)
                    print(self.status, file=real, flush=True)
        finally:
            self.deciding = None
            self.invalidate()

    async def _decide_in_terminal(self, rid: str, approve: bool, real: Any) -> str:
        from relay_repl.core.errors import describe

        held = self.model.requests.get(rid, {})
        print(file=real, flush=True)
        print(visible(f"relay watch: request {rid} from {held.get('asker')} to {held.get('to')}: "
                      f"{held.get('body', '')}"), file=real, flush=True)
        try:
            if approve:
                async with self.decide(True) as s:  # type: ignore[misc]
                    with s.running(ToTerminal(real)):
                        d = await s.approve_request(rid)
                return visible(f"{clock(time.time())} request {rid}: {d.summary()}")
            from relay_repl.session.core.gate import yes_no_session

            why = await yes_no_session(visible(f"reason for denying {rid} (the asker reads it; Enter: none; Esc: "
                                               "keep it held):")).prompt_async()
            if why is None:
                return f"{clock(time.time())} request {rid}: still held (nothing decided)"
            async with self.decide(False) as s:  # type: ignore[misc]
                with s.running(ToTerminal(real)):
                    req = s.deny_request(rid, why=why.strip() or None)
            return visible(f"{clock(time.time())} request {rid} denied: {req.why}; nothing was sent")
        except RelayError as exc:
            return visible(f"{clock(time.time())} request {rid}: {exc}")
        except Exception as exc:  # the view stays up: one sentence, never a traceback
            return visible(f"{clock(time.time())} request {rid}: {describe(exc, 'deciding the request')}")

    # -- the app --------------------------------------------------------------------------------
    async def run(self) -> None:
        from prompt_toolkit.application import Application
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.layout import HSplit, Layout, Window
        from prompt_toolkit.layout.controls import FormattedTextControl

        follower, events, inbox = initial(self.path)
        self.model.apply(events, inbox)
        kb = KeyBindings()
        tg_holder: dict[str, Any] = {}

        @kb.add("q")
        @kb.add("c-c")
        def _quit(event: Any) -> None:
            event.app.exit()

        @kb.add("escape")
        def _close(event: Any) -> None:
            self.debug_text = self.debug_ref = None

        @kb.add("up")
        @kb.add("k")
        def _up(event: Any) -> None:
            if self.focus == "requests":
                self._choose(self._req_index(-1))
            else:
                self.selected = max(0, self.selected - 1)

        @kb.add("down")
        @kb.add("j")
        def _down(event: Any) -> None:
            if self.focus == "requests":
                self._choose(self._req_index(+1))
            else:
                self.selected += 1

        @kb.add("tab")
        def _tab(event: Any) -> None:
            self.focus = "requests" if self.focus == "deliveries" else "deliveries"

        @kb.add("a")
        @kb.add("x")
        def _decide(event: Any) -> None:
            tg_holder["tg"].start_soon(self.decide_request, event.key_sequence[0].key == "a")

        @kb.add("r")
        def _refresh(event: Any) -> None:
            self._last_refresh = 0.0
            self._refresh_wanted.set()

        @kb.add("enter")
        @kb.add("d")
        @kb.add("l")
        def _debug(event: Any) -> None:
            rows = self.model.deliveries()
            if event.key_sequence[0].key == "l" and self.debug_ref:
                ref = self.debug_ref
            elif rows:
                ref = rows[min(self.selected, len(rows) - 1)].ref
            else:
                return
            tg_holder["tg"].start_soon(self._open_debugger, ref)

        control = FormattedTextControl(self.fragments, focusable=True, show_cursor=False)  # type: ignore[arg-type]
        self.app = Application(layout=Layout(HSplit([Window(control, wrap_lines=False)])), key_bindings=kb,
                               full_screen=True, mouse_support=False)
        async with anyio.create_task_group() as tg:
            tg_holder["tg"] = tg
            tg.start_soon(self._follow, follower)
            tg.start_soon(self._targets)
            self._refresh_wanted.set()
            try:
                await self.app.run_async()
            finally:
                tg.cancel_scope.cancel()


async def watch(session: Any, path: Path | None = None, decide: Decide | None = None) -> None:
    """Open the view on `session` and the ledger at `path` (default: the session's) until q; held
    requests are decided through `decide` (none: the view only lists them)."""
    await WatchView(session, Path(path or session.ledger.path), decide).run()
