"""The operator's own actions behind relay's gate: `session.confirm(...)` and `session.gated(...)`.

Why: relay's own side effects (a send, listing the inbox, a debugger step) each show a
four-part plan and wait for y then Enter; an operator who wants the same for their own
(kill a stuck pane, restart a session, write a file a recipe needs, run a command on a host)
had no public way to ask. These reuse the one gate (session/core/gating.py: the plan logged, shown
and asked with the approver the session holds, so the REPL's terminal gate discards typed-ahead
keys exactly as for a send), and the one halt check (`Shared.check_halt`): nothing is asked
while a relay-halt is in force, and a halt that arrives while the plan is on screen wins over
the operator's y.

A decline RAISES `Declined` (one line in the REPL: nothing was done) rather than returning a
value to test: code written as `await session.confirm(...); do_it()` then cannot run `do_it()`
after an n by forgetting an `if`. The yes is an `Approval` bound to the plan shown (its digest in
the ledger's `answer` event, as for relay's own). Its transport reads `your code: HOW`, a name no
relay transport has, so it can never stand in for a send's approval.
"""

from __future__ import annotations

import functools
import inspect
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import ParamSpec, TypeVar

from relay_repl.core.approval import Approval, spend
from relay_repl.core.controls import visible
from relay_repl.core.errors import Declined, LoopHalt, UsageError, describe
from relay_repl.core.plan import Plan
from relay_repl.session.core.gating import Gatekeeper
from relay_repl.session.core.shared import Shared

P = ParamSpec("P")
T = TypeVar("T")

OWN = "your code: "  # every own action's transport starts so: never the name of one of relay's transports
IDENTIFIED = "named by you (session.confirm); relay did not look it up or check it"
NOTE = "an action of your own: relay shows, asks and records it; what runs after y is your code, not relay's"


def action_id() -> str:
    """The id an own action is recorded under (`session.why(id)`, `relay why id`): not a relay id
    of a message, so it never collides with one a peer could answer."""
    return f"action-{secrets.token_hex(4)}"


def action_plan(what: str, *, target: str, how: str, payload: str, done_when: str,
                files: Sequence[str] = (), relay_id: str | None = None) -> Plan:
    """The ordinary four-part plan for an action relay does not know: the operator's words in each part."""
    for name, value in (("what", what), ("target", target), ("how", how), ("done_when", done_when)):
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"session.confirm needs {name}= in words (it is part {name!r} of the plan shown)")
    if not isinstance(payload, str):
        raise UsageError("payload= must be the exact text (command, bytes) the action will use, as a str")
    if isinstance(files, str):
        files = (files,)
    return Plan(action=what.strip(), target=target.strip(), identified_by=IDENTIFIED, transport=OWN + how.strip(),
                payload=payload, delivered_when=done_when.strip(), files=tuple(files), notes=(NOTE,),
                relay_id=relay_id or action_id())


class Actions:
    """confirm and gated, over the session's gate and halt check."""

    def __init__(self, shared: Shared, gate: Gatekeeper) -> None:
        self.shared = shared
        self.gate = gate

    async def confirm(self, what: str, *, target: str, how: str, payload: str = "", done_when: str,
                      files: Sequence[str] = ()) -> Approval:
        """Show the plan, ask y/N; the approval on y, `Declined` on anything else, `LoopHalt` under a halt."""
        self.shared.check_halt()  # as a send: nothing is asked while a halt is in force
        plan = action_plan(what, target=target, how=how, payload=payload, done_when=done_when, files=files)
        answer = await self.gate.answer(plan)
        approval = answer.approval
        ledger = self.shared.ledger
        if approval is None:
            if answer.halt is not None:  # a halt arrived while the plan was on screen and won over the yes
                why = answer.withheld
                ledger.event("outcome", relay_id=plan.relay_id, data={"state": "withheld", "reason": why})
                raise LoopHalt(visible(f"withheld: {why} ({answer.halt.reason}): {plan.action} was not done; "
                                       "`relay halts` lists it, `relay unhalt` clears it"))
            ledger.event("outcome", relay_id=plan.relay_id, data={"state": "withheld", "reason": "the operator answered No"})
            raise Declined(visible(f"declined: {plan.action} was not done (only y then Enter approves)"))
        return approval

    def gated(self, fn: Callable[P, Awaitable[T]] | None = None, what: str | None = None, *, target: str,
              how: str | None = None, payload: str | None = None, done_when: str,
              files: Sequence[str] = ()) -> Callable[P, Awaitable[T]]:
        """`fn` wrapped: each call shows its plan (the payload, unless given, is the call itself:
        `name(args)`), and runs `fn` only after y; the approval is spent when `fn` returns or raises,
        and the ledger records how it ended. Without `fn`, a decorator (`@session.gated(target=..., ...)`)."""
        if fn is None:
            return functools.partial(self.gated, what=what, target=target, how=how, payload=payload,  # type: ignore[return-value]
                                     done_when=done_when, files=files)
        if not callable(fn):
            raise UsageError(f"session.gated wraps a function (async def ...), not {type(fn).__name__}")
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)

        @functools.wraps(fn)
        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            call = f"{name}({shown})"
            approval = await self.confirm(what or f"run {name}", target=target, how=how or f"await {name}(...)",
                                          payload=call if payload is None else payload, done_when=done_when,
                                          files=files)
            ledger = self.shared.ledger
            rid = approval.scope.relay_id
            try:
                called: object = fn(*args, **kwargs)
                result = await called if inspect.isawaitable(called) else called
            except BaseException as exc:
                ledger.event("outcome", relay_id=rid, data={"state": "failed", "reason": describe(exc, f"running {call}")})
                raise
            finally:
                spend(approval)
            ledger.event("outcome", relay_id=rid, data={"state": "done", "reason": f"{call} returned"})
            return result  # type: ignore[return-value]

        return run
