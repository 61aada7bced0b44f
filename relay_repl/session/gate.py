"""The approval gate: `await approve(plan) -> bool`, default No.

The gate is a dependency injected into the session, not a UI detail, so tests
and recipes can answer it and the REPL can ask on the terminal. There is no
auto-yes: an approver that always says yes would have to be written on purpose
by the caller, in code, and none ships here.

The terminal gate prints the plan and asks `[y/N]` with prompt_toolkit's
`prompt_async` (a sync prompt inside the REPL's running loop would raise).
Only `y`/`Y` approve; Enter, `n`, Ctrl-C and Ctrl-D answer No; other keys
are swallowed. With no terminal it answers No and says why.

What the gate returns to the session is an `Approval` (core/approval.py), not a
bool: `ask(approve, plan, scope)` asks the injected approver on the plan and, on
yes, mints the one approval bound to that plan's scope. The mint is taken here at
import, once per process, so no other module can mint one.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from relay_repl.core.approval import Approval, Scope, minter
from relay_repl.core.plan import Plan

_mint = minter()  # the only mint in this process (core.approval refuses a second taker)


def yes_no_session(message: str, **io: Any):  # -> PromptSession[bool]
    """A prompt_toolkit session answering True only for y/Y."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings

    kb = KeyBindings()

    def yes(event: Any) -> None:
        event.app.exit(result=True)

    def no(event: Any) -> None:
        event.app.exit(result=False)

    for key in ("y", "Y"):
        kb.add(key)(yes)
    for key in ("n", "N", "enter", "c-c", "c-d", "escape"):
        kb.add(key, eager=key == "escape")(no)
    kb.add("<any>")(lambda event: None)
    return PromptSession(f"{message} [y/N] ", key_bindings=kb, **io)


class TerminalGate:
    """Prints the plan, then asks on the terminal. No terminal → No."""

    def __init__(
        self,
        *,
        input: Any = None,
        output: Any = None,
        write: Callable[[str], None] | None = None,
        isatty: Callable[[], bool] | None = None,
    ) -> None:
        self._io = {k: v for k, v in {"input": input, "output": output}.items() if v is not None}
        self._write = write or (lambda s: print(s, flush=True))
        self._isatty = isatty or (lambda: sys.stdin.isatty() and sys.stdout.isatty())

    async def __call__(self, plan: Plan) -> bool:
        self._write(plan.render())
        if "input" not in self._io and not self._isatty():  # a given input (tests) is the terminal
            self._write("No terminal to ask on: answering No, nothing was done. Run it from a terminal to approve.")
            return False
        answer = await yes_no_session("Proceed?", **self._io).prompt_async()
        self._write("approved" if answer else "declined: nothing was done")
        return bool(answer)


class ScriptedGate:
    """Answers from a fixed list, then No: for tests and for recipes whose
    operator answered in advance. Keeps every plan it was shown."""

    def __init__(self, answers: Iterable[bool] = ()) -> None:
        self._answers = list(answers)
        self.shown: list[Plan] = []

    async def __call__(self, plan: Plan) -> bool:
        self.shown.append(plan)
        return self._answers.pop(0) if self._answers else False


class DenyGate:
    """Always No. The default wherever nobody can be asked."""

    def __init__(self, reason: str = "no approver configured") -> None:
        self.reason = reason
        self.shown: list[Plan] = []

    async def __call__(self, plan: Plan) -> bool:
        self.shown.append(plan)
        return False


ApproveFn = Callable[[Plan], Awaitable[bool]]


async def ask(approve: ApproveFn, plan: Plan, scope: Scope) -> Approval | None:
    """Show `plan` to the approver; on yes, the approval for exactly `scope` (which the
    session built from this very plan and its target), else None."""
    if scope.plan != Scope.of(plan).plan:
        raise ValueError("the scope is not the plan's")  # a bug in the caller, never an operator error
    return _mint(scope) if bool(await approve(plan)) else None
