"""The approval gate: `await approve(plan) -> bool`, default No.

The gate is a dependency injected into the session, not a UI detail, so tests
and recipes can answer it and the REPL can ask on the terminal. There is no
auto-yes: an approver that always says yes would have to be written on purpose
by the caller, in code, and none ships here.

The terminal gate prints the plan and asks for a line with prompt_toolkit's
`prompt_async` (a sync prompt inside the REPL's running loop would raise).
Why a line and not a key: a single key approved whatever plan came next when
the operator typed `y` then Enter (the Enter declined the next plan) or `yy`
(the second y approved a plan not yet printed). So only `y` or `yes` (any case)
then Enter approves; Enter alone, `n`, any other text, Ctrl-C, Ctrl-D and Esc
decline (other text declines rather than re-asks: a typo never becomes a yes).
Keys typed before the plan has finished printing never answer it: right
before reading, the terminal's pending input (tcflush) and prompt_toolkit's
own type-ahead buffer (keys an earlier app, e.g. ptpython, read but did not
process) are discarded. With no terminal it answers No and says why.

What the gate returns to the session is an `Approval` (core/approval.py), not a
bool: `ask(approve, plan, scope)` asks the injected approver on the plan and, on
yes, mints the one approval bound to that plan's scope. The mint is taken here at
import, once per process, so no other module can mint one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from relay_repl.core.approval import Approval, Scope, minter
from relay_repl.core.plan import Plan

_mint = minter()  # the only mint in this process (core.approval refuses a second taker)

PROMPT = "Proceed? [y/N] (type y then Enter)"
YES = ("y", "yes")


def yes_no_session(message: str, **io: Any):  # -> PromptSession[str | None]
    """A one-line prompt_toolkit session: returns the line typed before Enter, or
    None for Ctrl-C, Ctrl-D and Esc (each a No). `approves(line)` judges it."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings

    kb = KeyBindings()

    def abort(event: Any) -> None:
        event.app.exit(result=None)

    kb.add("c-c")(abort)
    kb.add("c-d")(abort)
    kb.add("escape", eager=True)(abort)
    return PromptSession(f"{message} ", key_bindings=kb, **io)


def approves(line: str | None) -> bool:
    """Only `y` or `yes` (any case, surrounding blanks ignored) approves."""
    return line is not None and line.strip().lower() in YES


def declined_because(line: str | None) -> str:
    """What the operator answered, in words, for the declined line."""
    if line is None:
        return "Ctrl-C, Ctrl-D or Esc"
    if not line.strip():
        return "Enter alone"
    return f"{line.strip()!r}"


def discard_typeahead(inp: Any) -> int:
    """Throw away every key typed before now so none answers the plan just shown:
    the terminal's unread input (when it is a tty) and prompt_toolkit's type-ahead
    buffer for this input. Returns how many keys (bytes, on the tty) were dropped,
    so the operator can be told why what they typed early did not count."""
    from prompt_toolkit.input.typeahead import get_typeahead

    dropped = len(get_typeahead(inp))
    try:
        fd = inp.fileno()
    except (AttributeError, NotImplementedError, OSError, ValueError):
        return dropped
    if os.isatty(fd):
        import fcntl
        import struct
        import termios

        with inp.raw_mode():  # in cooked mode a half-typed line (`yy`, no Enter) is not counted
            try:
                dropped += struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
            except OSError:
                pass
            termios.tcflush(fd, termios.TCIFLUSH)
    return dropped


async def plan_on_screen(timeout: float = 2.0) -> None:
    """Wait (bounded) until what was printed is on the terminal. In the REPL stdout is
    prompt_toolkit's patch_stdout proxy, whose thread writes up to 0.2 s late: without
    this wait the prompt could be drawn, and read keys, before its plan was visible."""
    pending = getattr(sys.stdout, "_flush_queue", None)  # StdoutProxy's queue of text not yet written
    if pending is None:
        return
    sys.stdout.flush()
    from relay_repl.system.polling import poll_until

    async def written() -> bool | None:
        return True if pending.empty() else None

    await poll_until(written, timeout=timeout, interval=0.01)


class TerminalGate:
    """Prints the plan, then asks for y and Enter on the terminal. No terminal → No."""

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

    def writing_to(self, write: Callable[[str], None]) -> TerminalGate:
        """The same gate printing its plan and its lines with `write`: what a run's approver hook asks
        when the plan must show somewhere other than sys.stdout (`relay watch`, past the REPL's patch)."""
        import copy

        gate = copy.copy(self)
        gate._write = write
        return gate

    typed_before = "this plan was shown"
    """When the discarded keys were typed, in the line that says so."""

    async def __call__(self, plan: Plan) -> bool:
        self.show(plan)
        if "input" not in self._io and not self._isatty():  # a given input (tests) is the terminal
            self._write("No terminal to ask on: answering No, nothing was done. Run it from a terminal to approve.")
            return False
        answer = approves(line := await self._read_answer())
        self._write("approved" if answer else f"declined: nothing was done ({plan.action}; you answered "
                    f"{declined_because(line)}, only y then Enter approves)")
        return answer

    def show(self, plan: Plan) -> None:
        """Put the plan on screen before the question (session/core/preshown_gate.py: unless it is there)."""
        self._write(plan.render())

    async def _read_answer(self) -> str | None:
        """The line typed after the plan was shown; type-ahead is discarded first."""
        await plan_on_screen()
        session = yes_no_session(PROMPT, **self._io)
        if dropped := discard_typeahead(session.input):
            self._write(f"({dropped} key{'s' if dropped > 1 else ''} typed before {self.typed_before}: "
                        "discarded, not an answer)")
            await plan_on_screen()  # the note above the prompt, not drawn after it (issue 17: seen at load 8)
        return await session.prompt_async()


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
