"""The terminal gate of a plan already on screen: `relay send`'s plain pre-plan (frontends/send_plain.py).

Phase 1 printed a plan before the models were loaded; the models then build the plan they would act
on. This gate is asked about that plan, as any gate: when its digest (`approval.plan_digest`) is the
digest of what phase 1 printed, the operator is looking at exactly it, so it is not printed again
and the question follows; when it differs, one line says the plan changed and the new plan is
printed, and that plan is the one asked about (and the only one a yes can approve: the approval is
minted for the plan passed here, as for every gate). Only the first plan of the process is compared:
any later one is shown as `TerminalGate` shows it.

Keys typed before the question are discarded as always; the line that says so says "before the
question was asked", since the plan was on screen well before the prompt.
"""

from __future__ import annotations

from typing import Any

from relay_repl.core.approval import plan_digest
from relay_repl.core.plan import Plan
from relay_repl.session.core.gate import TerminalGate

CHANGED = "the plan changed while it was shown; this is the plan now:"


class PreShownGate(TerminalGate):
    """`TerminalGate` for a first plan already printed, whose digest is `shown`."""

    typed_before = "the question was asked"

    def __init__(self, shown: str, **io: Any) -> None:
        super().__init__(**io)
        self._shown: str | None = shown

    def show(self, plan: Plan) -> None:
        shown, self._shown = self._shown, None
        if shown is not None and plan_digest(plan) == shown:
            return  # exactly these bytes are on screen already
        if shown is not None:
            self._write(CHANGED)
        super().show(plan)
