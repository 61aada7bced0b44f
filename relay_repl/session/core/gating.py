"""The session's gate: every side effect's plan is logged, shown and asked here.

A yes is an `Approval` bound to the plan's scope (the target with its pid and process start
time, the transport, the exact payload); a no leaves one `answer` event and nothing else. A
relay-halt recorded while the plan was on screen wins over a yes: it is spent unused and the
answer is recorded as withheld (`relay-halt from P arrived while the plan was shown`).
Its own part of the session because sending, listing the inbox as a peer, cleaning crashed
inboxes and the debugger's steps all pass the same gate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relay_repl.core.approval import Approval, Scope, spend
from relay_repl.core.controls import visible
from relay_repl.core.plan import Plan
from relay_repl.core.target import Target
from relay_repl.session.core.gate import ask
from relay_repl.session.core.shared import Shared
from relay_repl.store.ledger import Halt
from relay_repl.system import startup_gc


@dataclass(frozen=True)
class GateAnswer:
    """What the gate ended with: the approval, or None and, when a relay-halt won over a yes, why."""

    approval: Approval | None
    withheld: str | None = None
    halt: Halt | None = None


class Gatekeeper:
    """Show, log and ask, with the approver the shared state holds at the time of asking."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    async def gated(self, plan: Plan, *, delivery: str | None = None, target: Target | None = None,
                    on_halts: bool = False) -> Approval | None:
        """Show, log and ask; the gate's approval for exactly this plan and `target` (pid and
        process start time included), or None for a No (or a yes a halt withheld: `answer` says which)."""
        return (await self.answer(plan, delivery=delivery, target=target, on_halts=on_halts)).approval

    async def answer(self, plan: Plan, *, delivery: str | None = None, target: Target | None = None,
                     on_halts: bool = False, with_plan: Callable[[], object] | None = None,
                     on_yes: Callable[[], object] | None = None) -> GateAnswer:
        """`gated`, with why there is no approval: `withheld` names the halt that won over a yes, and
        is None for the operator's own No. The one place that knows it; callers never ask the ledger
        again (a halt arriving after a No is still a No). `on_halts`: the plan acts on the halts
        themselves (`relay unhalt` clears the ones it names, a halt arriving meanwhile stays in
        force), so a halt does not withhold it.

        `with_plan`: the caller's ledger writes that go in the plan event's commit, before it (a send's
        `delivery` event); `on_yes`: those that go in the `answer` event's commit, after it, only when
        the answer is an approval no halt withheld (a send's sent mark). Why: each commit is relay CPU,
        and these were two more per target of every send (issue 33); nothing is shown or done between
        them, so a crash keeps both or neither."""
        startup_gc.resume()  # a plan is shown: a one-liner's start (collector paused, system/startup_gc.py) is over
        ledger = self.shared.ledger
        scope = self.scope(plan, target)  # reads /proc: before the write lock
        with ledger.one_commit():
            if with_plan is not None:
                with_plan()
            ledger.event("plan", delivery=delivery, relay_id=plan.relay_id, data=plan.model_dump())
        try:
            approval = await ask(self.shared.approve, plan, scope)
        except BaseException:
            ledger.event("answer", delivery=delivery, relay_id=plan.relay_id, data={"approved": False, "why": "prompt aborted"})
            raise
        with ledger.one_commit():  # the halt read in the same transaction as the writes it decides
            halt = ledger.active_halt() if approval is not None and not on_halts else None
            withheld = None
            if halt is not None:  # it arrived while the plan was on screen (the inbox is served meanwhile): it wins
                spend(approval)
                approval, withheld = None, withheld_by(halt)
            data: dict[str, object] = {"approved": approval is not None}
            if approval is not None:
                data["approval"] = approval.digest
            if withheld is not None:
                data["withheld"] = withheld
            ledger.event("answer", delivery=delivery, relay_id=plan.relay_id, data=data)
            if approval is not None and on_yes is not None:
                on_yes()
        return GateAnswer(approval=approval, withheld=withheld, halt=halt)

    @staticmethod
    def scope(plan: Plan, target: Target | None) -> Scope:
        if target is None:
            return Scope.of(plan)
        from relay_repl.system.proc import proc_start

        start = target.proc_start or (proc_start(target.pid) if target.pid else None)
        return Scope.of(plan, target=target.spec, pid=target.pid, proc_start=None if start is None else str(start),
                        address=target.address, pane=target.pane)


def withheld_by(halt: Halt) -> str:
    """Why a yes sent nothing: `relay-halt from P arrived while the plan was shown`."""
    return visible(f"relay-halt from {halt.by} arrived while the plan was shown")
