"""Builds the session a front end hands to the operator.

One place decides which providers and transports exist, so the REPL, the CLI
one-liners and the tests all get the same session for the same flags.
"""

from __future__ import annotations

from collections.abc import Callable

from .gate import ApproveFn, TerminalGate
from .ledger import Ledger
from .session import Session, StaticProvider


def make_session(
    *,
    fake: bool = False,
    approve: ApproveFn | None = None,
    echo: Callable[[str], None] | None = print,
    ledger: Ledger | None = None,
) -> Session:
    providers = []
    transports = []
    if fake:
        from .transports.fake import InMemoryTransport, fake_target

        providers.append(StaticProvider("fake", [fake_target()]))
        transports.append(InMemoryTransport())
    return Session(
        ledger=ledger or Ledger.default(),
        approve=approve or TerminalGate(),
        providers=providers,
        transports=transports,
        echo=echo,
    )
