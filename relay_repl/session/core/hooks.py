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
- `send`: the replay stage of the operator's own sends (`session.send`, a transport handle),
  given the request (session/core/send_request.py) and how to carry on with it, so a resumed run
  answers a call from the ledger, or records it first, or plans it only;
- `on_request`, `on_plan`, `on_outcome`: told of every request that enters the send pipeline
  (send, reply, forward, a chain, a send to a host, an agent's request and its answer), of each
  plan it builds before the gate is asked, and of the delivery it ends with: what a run records
  without changing the send.

Hooks installed later see a call first (they wrap the ones before them), as the swaps they
replace did. What a notebook cell prints itself is kept through the cell's own `print` (its
namespace's), not by replacing `sys.stdout` (session/runs/notebook.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from relay_repl.session.core.gate import ApproveFn

if TYPE_CHECKING:
    from relay_repl.core.delivery import Delivery
    from relay_repl.core.plan import Plan
    from relay_repl.session.core.send_request import SendRequest

Echo = Callable[[str], None]
Proceed = Callable[["SendRequest"], Awaitable["Delivery"]]
"""How a `send` hook carries on with a request (possibly changed): the next hook, then the pipeline."""


class RunHooks:
    """One run's hooks; each member here changes nothing, a run overrides the ones it needs."""

    def approver(self, approve: ApproveFn) -> ApproveFn:
        """The approver the gate asks while the run lasts, given the one it would ask otherwise."""
        return approve

    def echo(self, echo: Echo | None) -> Echo | None:
        """Where progress lines go while the run lasts, given where they would go (None: nowhere).
        The lines reaching it are already neutralised (the session wraps the result in `safe_echo`)."""
        return echo

    async def send(self, req: SendRequest, proceed: Proceed) -> Delivery:
        """`session.send(target, body, ...)` while the run lasts: carry on (`proceed`), or answer it."""
        return await proceed(req)

    def on_request(self, req: SendRequest) -> None:
        """A request entered the send pipeline (before anything is resolved or asked)."""

    def on_plan(self, req: SendRequest, plan: Plan) -> None:
        """The plan the pipeline built for `req`, before the gate is asked (a host's plan is built there)."""

    def on_outcome(self, req: SendRequest, delivery: Delivery) -> None:
        """The delivery `req` ended with (whatever its state), as the pipeline returns it."""


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

    async def send(self, req: SendRequest, last: Proceed) -> Delivery:
        """The request through every installed `send` hook, newest first, then `last` (the pipeline)."""
        stack = list(self._installed)

        async def at(i: int, req: SendRequest) -> Delivery:
            if i < 0:
                return await last(req)
            return await stack[i].send(req, lambda r: at(i - 1, r))

        return await at(len(stack) - 1, req)

    def on_request(self, req: SendRequest) -> None:
        for h in list(self._installed):
            h.on_request(req)

    def on_plan(self, req: SendRequest, plan: Plan) -> None:
        for h in list(self._installed):
            h.on_plan(req, plan)

    def on_outcome(self, req: SendRequest, delivery: Delivery) -> None:
        for h in list(self._installed):
            h.on_outcome(req, delivery)
