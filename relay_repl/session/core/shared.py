"""What every part of a session shares: the ledger, the gate's approver, who we are, where
progress goes, and this process's deliveries.

Why one object: the session is split into parts with one job each (finding targets, sending,
answers); each reads these at call time, so a new echo or operator's approver set on the
session reaches every part at once, and so do the hooks a run installs (session/core/hooks.py: a
notebook or recipe run wraps the approver and the echo through them, never by assignment).
"""

from __future__ import annotations

from collections.abc import Callable

from relay_repl.core.controls import safe_echo
from relay_repl.core.delivery import Delivery, DeliveryTable
from relay_repl.core.errors import LoopHalt, UsageError
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ApproveFn
from relay_repl.session.core.hooks import Hooks
from relay_repl.store.ledger import Ledger


def default_me() -> Me:
    """The operator's address until an inbox is registered: user.host.pid (`whoami.default_address`)."""
    from relay_repl.session.core.whoami import default_address

    return Me(address=default_address())


class Shared:
    """The state the session's parts read and write together (see the module docstring)."""

    def __init__(self, *, ledger: Ledger, approve: ApproveFn, me: Me,
                 echo: Callable[[str], None] | None = None) -> None:
        self.ledger = ledger
        self.operator_approve = approve  # the operator's own gate (what the REPL, the CLI or a test gave)
        self.me = me
        self.hooks = Hooks()  # what the runs in progress add (session/core/hooks.py)
        self.echo = echo
        self.deliveries: list[Delivery] = DeliveryTable()  # prints as a table in the REPL

    @property
    def approve(self) -> ApproveFn:
        """The approver the gate asks now: the operator's, as each run in progress wraps it."""
        return self.hooks.approver(self.operator_approve) if self.hooks else self.operator_approve

    @property
    def echo(self) -> Callable[[str], None] | None:
        """Where progress and inbound lines go; None: nowhere. Whatever is assigned is wrapped in
        `safe_echo`, so a peer's escape sequence or bidi override never reaches the terminal raw
        (nor a run's capture of it: the runs' echo hooks sit inside the neutraliser)."""
        if not self.hooks:
            return self._echo
        hooked = self.hooks.echo(self._raw_echo)
        return None if hooked is None else self._echo if hooked is self._raw_echo else safe_echo(hooked)

    @echo.setter
    def echo(self, echo: Callable[[str], None] | None) -> None:
        self._raw_echo = echo
        self._echo = safe_echo(echo) if echo is not None else None

    @property
    def echoes_to_stdout(self) -> bool:
        """Whether progress lines are printed to standard output (the REPL's and the CLI's default)."""
        return self._raw_echo is print

    def say(self, line: str) -> None:
        """A progress line to the echo, or to stdout when there is none."""
        (self.echo or print)(line)

    def check_halt(self) -> None:
        halt = self.ledger.active_halt()
        if halt:
            raise LoopHalt(f"relay-halt is in force ({halt.reason}, by {halt.by}): nothing is sent and no wait "
                           "continues until `session.unhalt()` (or `relay unhalt`; `relay halts` lists them)")

    def find_delivery(self, ref: Delivery | str) -> Delivery:
        if isinstance(ref, Delivery):
            return ref
        hits = [d for d in self.deliveries if ref in (d.relay_id, d.key)]
        if not hits:
            raise UsageError(f"no delivery {ref!r} in this session; `session.why({ref!r})` shows what the ledger has")
        return hits[-1]
