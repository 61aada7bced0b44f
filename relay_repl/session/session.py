"""The object the operator holds: discovery, the gate, sends, the ledger.

`Session` is what the REPL, notebooks, recipes and the CLI use; it holds no logic of its own
beyond assembling parts with one job each and handing each call to its part:

- finding targets (session/core/finder.py): discovery, the last list found, resolving a name;
- planning, gating and sending (session/core/sending.py, the gate in session/core/gating.py): the
  transports, the plan, the operator's yes, the stages and their confirmation;
- the inbox and waiting for replies (session/core/answers.py): the inbox, linking an answer to
  its delivery, `d.wait_reply()` / `session.expect()`, the turn reply, `why`;

with the state they share (ledger, approver, `me`, echo, this process's deliveries) in
session/core/shared.py.

Every side effect goes through the gate: the plan is built, shown, logged, and only a yes
from the injected approver lets the transport act. A no leaves nothing on the target and one
`answer` event in the ledger. The yes is an `Approval` (core/approval.py) minted by the gate
for that plan's scope (target with pid and start time, transport, exact payload, files);
every primitive refuses without it, and it is spent when the delivery (or debugger step)
ends. `session.transports` holds handles that send through `session.send`, never the
transport objects themselves (transports/chain.py).

Conversations: a send that asks for an answer (want=reply|ack) first asks the target's agent
module how the answer will come back (the plan shows it) and refuses when there is no route.
Answers reach the inbox, which judges their origin and reads their `re=` header; the session
links a verified answer to its delivery (`d.reply`, state `replied`/`acknowledged`) and wakes
whoever waits in `d.wait_reply()` / `session.expect()`. A relay-halt ends every wait.
"""

from __future__ import annotations

import warnings
from contextlib import AbstractContextManager
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from anyio.abc import TaskGroup

from relay_repl.agents.discovery import Provider
from relay_repl.core.approval import Approval
from relay_repl.core.delivery import Delivery
from relay_repl.core.envelope import Want
from relay_repl.core.errors import Halted, UsageError
from relay_repl.core.plan import Plan, ReplyRoute
from relay_repl.core.target import Me, Target, TargetTable
from relay_repl.session.core import hints
from relay_repl.session.core.answers import Answers, answer_refusal
from relay_repl.session.core.finder import Finder
from relay_repl.session.core.gate import ApproveFn, DenyGate
from relay_repl.session.core.gating import GateAnswer, Gatekeeper
from relay_repl.session.core.sending import Sender, remote_spec
from relay_repl.session.core.sendoptions import SendOptions
from relay_repl.session.core.shared import Shared, default_me
from relay_repl.store.ledger import Ledger
from relay_repl.transports.base import StageLog, Transport
from relay_repl.transports.chain import Chain, TransportTable

if TYPE_CHECKING:  # the send path's plan needs none of these: each loads on first use
    from relay_repl.core.inbound import InboundMessage
    from relay_repl.core.request import Request
    from relay_repl.core.turn_reply import TurnReply
    from relay_repl.session.core.actions import Actions
    from relay_repl.session.core.hooks import RunHooks
    from relay_repl.session.core.requests import Requests, RequestTable
    from relay_repl.session.remote.host_requests import HostRequests
    from relay_repl.session.remote.remote_send import RemoteSends
    from relay_repl.agents.kind import InboxListing
    from relay_repl.agents.provenance import VerifyReport
    from relay_repl.session.runs.debugger import Debugger
    from relay_repl.session.core.inbox import Inbox, InboxRecord
    from relay_repl.session.runs.notebook import NotebookRun, ReplInput
    from relay_repl.session.runs.runner import Run
    from relay_repl.store.timeline import InboxTable, Timeline
    from relay_repl.transports.ranking import Choice

P = ParamSpec("P")
T = TypeVar("T")

__all__ = ["Session", "answer_refusal", "default_me"]  # the last two re-exported: their old home


def remote_sends(shared: Shared) -> RemoteSends:
    """The sends to targets on other hosts, for `Sender` (which never imports them): made, and their
    module loaded, on a session's first host spec."""
    from relay_repl.session.remote.remote_send import RemoteSends

    return RemoteSends(shared)


class Session:
    """What `session` is in the REPL. Async throughout; cheap to refresh."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        approve: ApproveFn | None = None,
        me: Me | None = None,
        providers: Sequence[Provider] = (),
        transports: Sequence[Transport] = (),
        echo: Callable[[str], None] | None = None,
    ) -> None:
        self.shared = Shared(ledger=ledger, approve=approve or DenyGate(), me=me or default_me(), echo=echo)
        self.finder = Finder(providers)
        self.gate = Gatekeeper(self.shared)
        self.answers = Answers(self.shared, self.finder, self.gate)
        self.sender = Sender(self.shared, self.finder, self.gate, self.answers, transports, remote=remote_sends)
        self._actions: Actions | None = None  # `confirm`/`gated` (session/core/actions.py), made on first use
        self._asks: Requests | None = None  # agents' requests to send (session/core/requests.py), made on first use
        self._host_asks: HostRequests | None = None  # takes hosts' agents' requests (session.host_requests)
        self.repl_inputs: list[ReplInput] = []  # what the REPL ran, for save_notebook

    # -- made on first use: a one-liner's send reaches its plan without their modules (issue 40)
    @property
    def actions(self) -> Actions:
        if self._actions is None:
            from relay_repl.session.core.actions import Actions

            self._actions = Actions(self.shared, self.gate)
        return self._actions

    @property
    def asks(self) -> Requests:
        """Agents' requests to send (session/core/requests.py), their store mirrored to a host's copy."""
        if self._asks is None:
            from relay_repl.session.remote.request_mirror import MirroredStore
            from relay_repl.session.core.requests import Requests

            asks = Requests(self.shared, self.sender)
            asks.store = MirroredStore(self.shared, lambda: self.sender.remote)  # a host's request: its copy told
            self._asks = asks
        return self._asks

    # -- the shared state, as the callers have always named it ---------------------------
    @property
    def ledger(self) -> Ledger:
        return self.shared.ledger

    @property
    def approve(self) -> ApproveFn:
        return self.shared.approve

    @approve.setter
    def approve(self, approve: ApproveFn) -> None:  # the operator's own gate; a run adds to it through `running`
        self.shared.operator_approve = approve

    def running(self, hooks: RunHooks) -> AbstractContextManager[RunHooks]:
        """`with session.running(hooks):` puts a run's hooks on the send path for the block's length:
        its approver per call and its replay stage for `send` (session/core/hooks.py)."""
        return self.shared.hooks.installed(hooks)

    @property
    def me(self) -> Me:
        return self.shared.me

    @me.setter
    def me(self, me: Me) -> None:
        self.shared.me = me

    @property
    def echo(self) -> Callable[[str], None] | None:
        """Where progress and inbound lines go; None: nowhere. Whatever is assigned is wrapped in
        `safe_echo`, so a peer's escape sequence or bidi override never reaches the terminal raw."""
        return self.shared.echo

    @echo.setter
    def echo(self, echo: Callable[[str], None] | None) -> None:
        self.shared.echo = echo

    @property
    def deliveries(self) -> list[Delivery]:
        return self.shared.deliveries

    @property
    def providers(self) -> list[Provider]:
        return self.finder.providers

    @property
    def inbox_server(self) -> Inbox | None:
        return self.answers.inbox_server

    @property
    def registration(self) -> InboxListing | None:
        return self.answers.registration

    # -- finding targets -----------------------------------------------------------------
    async def refresh(self) -> list[Target]:
        return await self.finder.refresh()

    @property
    def targets(self) -> TargetTable:
        """The last discovered targets, printed as a table (`await session.refresh()` re-reads)."""
        return self.finder.table

    async def target(self, spec: str | Target) -> Target:
        """Resolve `claude:alpha`, `codex:<name or uuid>`, `%<pane>`, `fake:inbox`.

        Refuses to guess: unknown, ambiguous and stale each raise a one-line
        error saying what to do next. `HOST/kind:name` is resolved by that host's relay.
        """
        if remote_spec(spec):
            return await self.sender.remote.target(spec)
        return await self.finder.resolve(spec)

    @property
    def _refreshed(self) -> bool:  # read by the notebook, the recipes and a live test
        return self.finder.refreshed

    @_refreshed.setter
    def _refreshed(self, value: bool) -> None:
        self.finder.refreshed = value

    @property
    def _targets(self) -> list[Target]:
        return self.finder.found

    @_targets.setter
    def _targets(self, found: list[Target]) -> None:  # a test reuses another session's discovery
        self.finder.found = found

    # -- planning, gating and sending ----------------------------------------------------
    @property
    def transports(self) -> TransportTable:
        """The transports as handles: `session.transports.tmux.send(target, body)` plans and asks like
        `session.send`; `a | b` chains them; `session.transports[NAME] = transport` installs one."""
        return self.sender.table

    @property
    def _transports(self) -> dict[str, Transport]:  # the raw transports, by name (debugger, runner, tests)
        return self.sender.transports

    def choose_transport(self, target: Target, requested: str | None = None, *, durable: bool = False,
                         native_reply: bool = False) -> Choice:
        """Rank the transports by capability (see transports.ranking)."""
        return self.sender.choose_transport(target, requested, durable=durable, native_reply=native_reply)

    async def send(
        self,
        target: str | Target,
        body: str,
        *,
        want: Want = "none",
        transport: str | Transport | Chain | None = None,
        to_role: str = "peer",
        durable: bool = False,
        native_reply: bool = False,
        timeout: float = 30.0,
        hop: int = 0,
        heading: str | None = None,
        relay_id: str | None = None,
        reply_via: str | None = None,
        _fallback: str | None = None,
    ) -> Delivery:
        """Plan, ask, send, confirm. Returns the Delivery with its explicit state.

        `durable=True` requires a durable path (never downgraded to a live-only
        one); `native_reply=True` requires one the receiver can answer natively.
        `hop` is for the initiator of a multi-round exchange (a recipe): 0 at the
        start of each round it declares, the chain's hop + 1 inside a round.
        `heading` is printed above the plan (where a recipe run stands);
        `relay_id` is one the caller took from `ledger.next_id` beforehand, so it
        could record the id before anything happened (a recipe, for resume).
        A body holding a control character is refused before anything else.
        `reply_via` asks for one reply route (native, relay-reply, mcp, turn) instead of the
        one the target's configuration allows best; the plan names the route either way.
        `transport` may be a name, a transport object (`session.transports.tmux`) or a chain
        (`session.transports.codex_queue | session.transports.tmux`).
        """
        options = SendOptions(want=want, transport=transport, to_role=to_role, durable=durable,
                              native_reply=native_reply, timeout=timeout, hop=hop, heading=heading, relay_id=relay_id,
                              reply_via=reply_via, fallback=_fallback)
        return await self.sender.send(target, body, options)  # one SendRequest into the pipeline (Sender.submit)

    def reply_route(self, target: Target, relay_id: str = "<relay id>", via: str | None = None) -> ReplyRoute:
        """How `target` would answer a message from here (its agent module decides, from its
        own configuration; `via` asks for one route: native, relay-reply, mcp, turn)."""
        return self.sender.reply_route(target, relay_id, via)

    async def preview(self, target: str | Target, body: str, *, want: Want = "none", transport: str | None = None,
                      to_role: str = "peer", hop: int = 0, heading: str | None = None, relay_id: str | None = None) -> Plan:
        """The plan `send` would show, with nothing sent, asked or written (a dry run):
        the relay id is the one the ledger would hand out next, unless given."""
        return await self.sender.preview(target, body, want=want, transport=transport, to_role=to_role, hop=hop,
                                         heading=heading, relay_id=relay_id)

    async def forward(self, target: str | Target, line: str, *, transport: str | None = None,
                      durable: bool = False, native_reply: bool = False, want: Want | None = None,
                      timeout: float = 30.0, heading: str | None = None) -> Delivery:
        """Forward a pasted envelope: same id and sender, hop + 1; a duplicate id is dropped.

        The id is marked seen only once the operator said yes and the delivery starts:
        a forward declined at the gate, or aimed at a mistyped target, leaves it usable.
        `durable` and `native_reply` constrain the transport as for `send`; the envelope
        keeps its own want, so a contradicting `want` is refused rather than ignored."""
        return await self.sender.forward(target, line, transport=transport, durable=durable, native_reply=native_reply,
                                         want=want, timeout=timeout, heading=heading)

    async def reply(self, message: InboundMessage | int, text: str, *, want: Want = "none",
                    target: str | Target | None = None, transport: str | None = None,
                    timeout: float = 30.0) -> Delivery:
        """Answer a message that reached the inbox: hop + 1 (never reset), `re=` its id.

        The answer goes to the session the message was verified to come from; a
        message whose origin is not verified is answered only to an explicit
        `target=` (relay will not route by a claim). Duplicates, halts and the hop
        cap are refused before anything is planned.
        """
        return await self.sender.reply(message, text, want=want, target=target, transport=transport, timeout=timeout)

    # -- the operator's own actions behind the same gate ------------------------------------
    async def confirm(self, what: str, *, target: str, how: str, payload: str = "", done_when: str,
                      files: Sequence[str] = ()) -> Approval:
        """Ask y/N on the ordinary four-part plan for an action of your own (session/core/actions.py).

        `what` heads the plan; `target` is what it acts on, `how` the means (a command, a tool),
        `payload` the exact text it will use, `done_when` what will show it worked, `files` every file
        it creates or replaces. Returns the `Approval` bound to that plan on y; anything else raises
        `Declined` (nothing was done), and a relay-halt in force (or arriving while the plan is shown)
        raises `LoopHalt`. Recorded in the ledger (plan, answer) under an `action-...` id.

            await session.confirm("restart alpha's pane", target="claude:alpha (pane %0)",
                                  how="tmux respawn-pane -k", payload="respawn-pane -k -t %0",
                                  done_when="the pane shows a fresh Claude prompt")
            # only reached after y
        """
        return await self.actions.confirm(what, target=target, how=how, payload=payload, done_when=done_when,
                                          files=files)

    def gated(self, fn: Callable[P, Awaitable[T]] | None = None, what: str | None = None, *, target: str,
              how: str | None = None, payload: str | None = None, done_when: str,
              files: Sequence[str] = ()) -> Callable[P, Awaitable[T]]:
        """`fn` (an async function) wrapped so each call first shows its plan (payload: the call
        itself, unless given) and runs only after y; see `confirm`. Also a decorator:
        `@session.gated(target=..., done_when=...)`. The ledger records the call's outcome."""
        return self.actions.gated(fn, what, target=target, how=how, payload=payload, done_when=done_when, files=files)

    def record_outcome(self, d: Delivery, **more: object) -> None:
        """The delivery's state and everything a later process needs to carry on (transport extras)."""
        self.sender.record_outcome(d, **more)

    async def _gated(self, plan: Plan, *, delivery: str | None = None, target: Target | None = None) -> GateAnswer:
        """The gate (session/core/gating.py), as the debugger asks it: the approval, or why there is none."""
        return await self.gate.answer(plan, delivery=delivery, target=target)

    async def _run_armed(self, d: Delivery, log: StageLog, approval: Approval | None,
                         step: Callable[[Approval], Awaitable[None]]) -> None:
        """A debugger step under the halt boundary (Sender.run_armed)."""
        await self.sender.run_armed(d, log, approval, step)

    def _halted(self, d: Delivery, log: StageLog, h: Halted) -> None:
        self.sender.halted(d, log, h)

    # -- the inbox and waiting for replies -------------------------------------------------
    async def open_inbox(self, task_group: TaskGroup, echo: Callable[[str], None] | None = None, *,
                         serve_requests: bool = True) -> Inbox:
        """Clean what crashed inboxes left, then listen on this session's own inbox in
        `task_group` and attach it: replies and receipts now have somewhere to go.

        `serve_requests` (the REPL, `relay serve`): agents' requests are taken here, the sweeper
        runs, and a host's request is told its state changes from `task_group`, off the event loop.
        A one-shot command's inbox (`serve_requests=False`: it waits for one answer, then exits)
        refuses requests with why (the inbox's own answer): one it held would be said to nobody."""
        inbox = await self.answers.open_inbox(task_group, echo)
        if serve_requests:
            self.asks.attach(inbox)
            self.asks.store.tell_from(task_group)
            task_group.start_soon(self.asks.sweeper)  # says each held request that expires, when it does
        return inbox

    def attach_inbox(self, inbox: Inbox) -> None:
        """Called by the REPL once its inbox listens: replies now have somewhere to go."""
        self.answers.attach_inbox(inbox)
        self.asks.attach(inbox)

    async def close_inbox(self) -> list[str]:
        """Remove the inbox's sockets and any registry entry it wrote (even while cancelled); the files removed."""
        return await self.answers.close_inbox()

    async def clean(self, echo: Callable[[str], None] | None = None) -> list[InboxRecord]:
        """Remove what crashed relay inboxes left (`relay clean`): relay's own files at once; files in
        other programs' directories (Claude's registry, its socket directories) only after the plan
        naming each one is shown and approved. Returns the inbox records cleaned."""
        return await self.answers.clean(echo)

    async def register_inbox(self, name: str = "relay-operator", *, pins: dict[str, object] | None = None) -> bool:
        """List the inbox as a peer (gated) of the agent kind whose sessions answer only to a listed
        peer (`AgentKind.replies.answers_listed_inbox`): its own listing names it, its native send reaches it.
        `pins`: the listing's random and clock values a plain phase already drew and showed (None: drawn now)."""
        return await self.answers.register_inbox(name, pins=pins)

    async def expect(self, delivery: Delivery | str, timeout: float = 60.0) -> InboundMessage | None:
        """Wait for the verified answer to a delivery (or relay id); see Delivery.wait_reply."""
        return await self.answers.expect(delivery, timeout)

    async def turn_reply(self, delivery: Delivery | str, timeout: float = 60.0) -> TurnReply | None:
        """The receiver's own final message in the turn `delivery` started, read from its
        rollout (Codex) or transcript (Claude): a reply route that needs no tool and no
        permission. Returns a TurnReply (answered / no final message / aborted) or None
        after `timeout`; recorded as `turn-reply` in `why(id)`."""
        return await self.answers.turn_reply(delivery, timeout)

    async def _wait_reply(self, d: Delivery, timeout: float) -> InboundMessage | None:  # the notebook's replay
        return await self.answers.wait_reply(d, timeout)

    def _link_turn_reply(self, d: Delivery, tgt: Target, found: TurnReply) -> InboundMessage:
        return self.answers.link_turn_reply(d, tgt, found)

    def why(self, relay_id: Delivery | str) -> Timeline:
        """Every event recorded for one relay id (or a Delivery), oldest first: a list that prints as a
        table, with the answers linked to it (by their `re=` header) and their verdicts beside the send."""
        return self.answers.why(relay_id)

    @property
    def inbox(self) -> InboxTable:
        """Every message that reached the operator's inbox (kept in the ledger), as a table with verdicts."""
        return self.answers.table

    # -- agents' requests to send ----------------------------------------------------------
    @property
    def requests(self) -> RequestTable:
        """The requests agents made (relay_send, `relay ask`) still held for your decision, as a table."""
        return self.asks.held()

    def request(self, request_id: str) -> Request:
        """One request by id, in whatever state it is (held, approved, denied, expired, delivered, ...)."""
        return self.asks.get(request_id)

    @property
    def request_expiry(self) -> float:
        """Seconds a request arriving from now on waits for a decision (default 600, or RELAY_REQUEST_EXPIRY)."""
        return self.asks.expiry

    @request_expiry.setter
    def request_expiry(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
            raise UsageError(f"request_expiry={seconds!r}: give a number of seconds above 0")
        self.asks.expiry = float(seconds)

    async def approve_request(self, request_id: str, *, wait: float = 60.0, transport: str | None = None,
                              timeout: float = 30.0) -> Delivery:
        """Show the plan for an agent's held request (the four-part plan for its resolved target, the asker
        named as the origin of the words, its consent-only flags, its hop) and ask y/N; on y send it.
        With want=reply|ack, wait up to `wait` s for the verified answer, show it, and ask y/N on taking it
        to the asker (`re=` the request). Returns the delivery to the target."""
        return await self.asks.approve(request_id, wait=wait, transport=transport, timeout=timeout)

    def deny_request(self, request_id: str, why: str | None = None) -> Request:
        """Refuse a held request; its asker reads `denied (why)`. Nothing is sent."""
        return self.asks.deny(request_id, why)

    async def host_requests(self, host: str) -> RequestTable:
        """Take the requests HOST's agents made (held there by its `relay serve`) up the channel and hold them
        here as `HOST/<id>`, each row checked (a host's word is a claim; session/remote/host_requests.py); returns
        those newly held. The first call opens HOST's inbox, so its agents can ask while this session's
        channel to it lives; from then on the REPL takes new ones every few seconds and shows each as it
        arrives. Then `session.requests` lists them and `approve_request` decides them."""
        from relay_repl.session.remote.host_requests import HostRequests

        if self._host_asks is None:
            self._host_asks = HostRequests(self.shared, self.asks, self.sender.remote)
        taker = self._host_asks
        new = await taker.pull(host)
        self.asks.pulls[host] = lambda: taker.pull(host)  # the REPL's sweeper takes new ones as they arrive
        return new

    async def next_request(self, timeout: float | None = None) -> Request | None:
        """The next held request not handed out yet (for recipes and notebooks), waiting up to `timeout` s."""
        return await self.asks.next_request(timeout)

    async def relay_answer(self, request_id: str, *, transport: str | None = None, timeout: float = 30.0) -> Delivery:
        """Take the verified answer to an approved request to the agent that asked (its own plan, y/N)."""
        return await self.asks.relay_answer(request_id, transport=transport, timeout=timeout)

    # -- debugging a stuck delivery -------------------------------------------------------
    def debugger(self, delivery: Delivery | str) -> Debugger:
        """A debugger for one delivery (this process's, or any in the ledger by key or relay id).

        `dbg = session.debugger(d)`; `await dbg.look()`, `await dbg.step()`, `await dbg.resume()`,
        `await dbg.walk()`, `dbg.abandon("why")`. It prints as a table of the stages done and the one next."""
        from relay_repl.core.errors import RelayError
        from relay_repl.session.runs.debugger import Debugger, Recorded, rebuild

        ref = delivery.key if isinstance(delivery, Delivery) else str(delivery).strip()
        from relay_repl.session.remote.remote_send import remote_debugger

        if (on_host := remote_debugger(self.sender.remote, ref)) is not None:  # a send made on a host
            return on_host  # type: ignore[return-value]
        mine = [d for d in self.deliveries if ref in (d.key, d.relay_id)]
        try:
            rec = rebuild(self.ledger, ref)
        except RelayError:
            if not mine:
                raise
            rec = Recorded(delivery=mine[-1])
        if mine:  # this process's own object, so the operator's `d` follows each step
            rec = rec.model_copy(update={"delivery": mine[-1]})
        return Debugger(self, rec)

    async def debug(self, delivery: Delivery | str, *, recheck: float = 5.0) -> Delivery:
        """Deprecated: `await session.debugger(d).walk(recheck)` (this process's deliveries only, as before)."""
        warnings.warn("session.debug(d) is deprecated: use `await session.debugger(d).walk()`", DeprecationWarning,
                      stacklevel=2)
        return await self.debugger(self.shared.find_delivery(delivery)).walk(recheck=recheck)

    async def watch(self) -> None:
        """A live, full-screen view of the targets, the deliveries in flight (stage, last evidence), the
        held agent requests, the inbox and the newest events, updated as the ledger is written; Enter
        opens the chosen delivery in the debugger (read-only); a / x decide the chosen held request as
        `approve_request` / `deny_request` do (the plan and this session's own gate, off the view's
        screen); q returns here."""
        from collections.abc import AsyncIterator
        from contextlib import asynccontextmanager

        from relay_repl.session.core.watch_view import watch

        @asynccontextmanager
        async def decide(listen: bool) -> AsyncIterator[Session]:
            yield self  # this session's gate and inbox: the same decision as typing approve_request here

        await watch(self, decide=decide)  # a line the REPL echoes meanwhile is printed by prompt_toolkit around the view

    # -- recipes -------------------------------------------------------------------------
    async def run(self, recipe: str, *, dry_run: bool = False, **params: object) -> Run:
        """Run a saved recipe (a name from `relay recipes`, or a .toml path): every send
        planned and gated, hop reset to 0 only at the start of each round. Returns a Run."""
        from relay_repl.session.runs.recipes import run_recipe

        return await run_recipe(self, recipe, params, dry_run=dry_run)

    async def resume(self, run_id: str) -> Run:
        """Continue a stopped run from the ledger; confirmed steps are never sent again."""
        from relay_repl.session.runs.recipes import resume_run

        return await resume_run(self, run_id)

    def save_recipe(self, name: str, *, description: str = "", overwrite: bool = False) -> Path:
        """Write this session's sends (and the replies they waited for) as $RELAY_HOME/recipes/NAME.toml."""
        from relay_repl.session.runs.recipes import save_recipe

        path = save_recipe(self, name, description=description, overwrite=overwrite)
        self.shared.say(f"wrote {path}; run it with `await session.run({name!r})` or `relay run {name}`")
        return path

    # -- notebooks ---------------------------------------------------------------------
    async def notebook(self, path: str, *, dry_run: bool = False, **params: object) -> NotebookRun:
        """Run a notebook (FILE.py of `# %%` cells) here, through this session's gate; returns its run."""
        from relay_repl.session.runs.notebook import run_notebook

        return await run_notebook(self, path, {k: str(v) for k, v in params.items()}, dry_run=dry_run)

    def save_notebook(self, name: str, *, overwrite: bool = False) -> Path:
        """Write this REPL session's inputs that ran without error as ./NAME.py cells, with a first report."""
        from relay_repl.session.runs.notebook import save_notebook

        path = save_notebook(self, name, overwrite=overwrite)
        self.shared.say(f"wrote {path}; run it with `relay notebook run {path}` (--dry-run shows every plan)")
        return path

    # -- halts and history -----------------------------------------------------------
    def halt(self, reason: str = "operator halt") -> None:
        """Halt here, and on every host this session sent to (one line per host not told)."""
        self.ledger.halt(reason, by=self.me.sender)
        self.sender.remote.halt(reason, by=self.me.sender)

    def unhalt(self) -> int:
        return self.ledger.clear_halts(by=self.me.sender)

    def _check_halt(self) -> None:
        self.shared.check_halt()

    async def verify(self, relay_id: str, target: str | Target | None = None, *,
                     transcript: str | None = None) -> VerifyReport:
        """Seed section 8 audit: who really sent `relay_id`, from the receiver's own origin records
        (a target's transcript, any transcript file, or every live Claude target's); read-only.
        Returns a `VerifyReport` (`.verdict`, `.records`, `.exit_code`); see session/core/verify.py."""
        import anyio

        from relay_repl.session.core import verify as v

        if target is not None and transcript is not None:
            raise UsageError("name a target or a transcript file, not both")
        if transcript is not None:
            return await anyio.to_thread.run_sync(v.verify_file, relay_id, transcript, self.ledger)
        if target is not None:
            t = await self.target(target)
            return await anyio.to_thread.run_sync(v.verify_target, relay_id, t, self.ledger)
        return await anyio.to_thread.run_sync(v.verify_everywhere, relay_id, await self.finder.known(), self.ledger)

    def __getattr__(self, name: str) -> object:
        """Only for a name Session lacks: a mistake with a certain fix says it (session/core/hints.py)."""
        raise hints.missing("Session", name, hints.SESSION)

    def __repr__(self) -> str:
        lines = [f"<Session me={self.me.sender} inbox={self.me.inbox or 'none'}"]
        if not self.finder.refreshed:
            lines.append("  targets: not discovered yet (await session.refresh())")
        elif not self.finder.found:
            lines.append("  targets: none found")
        else:
            lines.append(f"  targets ({len(self.finder.found)}):")
            lines += ["    " + row for row in self.finder.table.__repr__().splitlines()]
        open_ = [d for d in self.deliveries if d.outcome == "pending"]
        lines.append(f"  deliveries: {len(self.deliveries)} ({len(open_)} open)")
        lines += [f"    {d!r}" for d in open_]
        held = self.asks.store.held()
        if held:
            lines.append(f"  requests held: {len(held)} (session.requests)")
        halt = self.ledger.active_halt()
        if halt:
            lines.append(f"  HALTED: {halt.reason}")
        return "\n".join(lines) + ">"
