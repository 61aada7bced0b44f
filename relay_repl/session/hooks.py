"""What a run adds to the session's send path, as explicit hooks instead of patched methods.

A notebook run heads every plan and records every send for resume; a recipe run asks one plan
at a time; an agent's request records the operator's yes as the request's approval. Each used
to swap `session.approve` (and the notebook `session.send` and `sys.stdout`) for its length,
which any other caller could not see, undo or nest. Now each is a `RunHooks` installed with
`session.running(hooks)` (a `with` block), and the session asks the hooks installed at call
time at three points:

- `approver`: the approver the gate asks (per call: each gate call reads it anew), given the
  one it would ask otherwise, so a run can head the plan, answer a dry run itself, or
  serialise the prompts;
- `echo`: where the session's progress lines go, given where they would go (output capture: a
  notebook keeps the lines shown while a cell runs in the cell's record, as it keeps the cell's
  own prints);
- `send`: the replay stage of `session.send`, given the call and how to carry on with it, so
  a resumed run answers a call from the ledger, or records it first, or plans it only.

Hooks installed later see a call first (they wrap the ones before them), as the swaps they
replace did. What a notebook cell prints itself is kept through the cell's own `print` (its
namespace's), not by replacing `sys.stdout` (session/notebook.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from relay_repl.session.gate import ApproveFn

if TYPE_CHECKING:
    from relay_repl.core.delivery import Delivery
    from relay_repl.core.target import Target
    from relay_repl.session.sendoptions import SendOptions

Echo = Callable[[str], None]
Proceed = Callable[["str | Target", str, "SendOptions"], Awaitable["Delivery"]]
"""How a `send` hook carries on with a call (possibly changed): the next hook, then the send itself."""


class RunHooks:
    """One run's hooks; each member here changes nothing, a run overrides the ones it needs."""

    def approver(self, approve: ApproveFn) -> ApproveFn:
        """The approver the gate asks while the run lasts, given the one it would ask otherwise."""
        return approve

    def echo(self, echo: Echo | None) -> Echo | None:
        """Where progress lines go while the run lasts, given where they would go (None: nowhere).
        The lines reaching it are already neutralised (the session wraps the result in `safe_echo`)."""
        return echo

    async def send(self, target: str | Target, body: str, options: SendOptions, proceed: Proceed) -> Delivery:
        """`session.send(target, body, ...)` while the run lasts: carry on (`proceed`), or answer it."""
        return await proceed(target, body, options)


class Hooks:
    """The hooks installed now, oldest first (on the session's shared state)."""

    def __init__(self) -> None:
        self._installed: list[RunHooks] = []

    @contextmanager
    def installed(self, hooks: RunHooks) -> Iterator[RunHooks]:
        """`hooks` on the send path for the block's length (removed however it ends)."""
        self._installed.append(hooks)
        try:
            yield hooks
        finally:
            self._installed.remove(hooks)  # by identity: runs that overlap may end in any order

    def __bool__(self) -> bool:
        return bool(self._installed)

    def approver(self, approve: ApproveFn) -> ApproveFn:
        for h in self._installed:
            approve = h.approver(approve)
        return approve

    def echo(self, echo: Echo | None) -> Echo | None:
        for h in self._installed:
            echo = h.echo(echo)
        return echo

    async def send(self, target: str | Target, body: str, options: SendOptions, last: Proceed) -> Delivery:
        """The call through every installed `send` hook, newest first, then `last` (the send itself)."""
        stack = list(self._installed)

        async def at(i: int, target: str | Target, body: str, options: SendOptions) -> Delivery:
            if i < 0:
                return await last(target, body, options)
            return await stack[i].send(target, body, options,
                                       lambda t, b, o: at(i - 1, t, b, o))

        return await at(len(stack) - 1, target, body, options)
