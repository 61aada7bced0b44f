"""Builds the session a front end hands to the operator.

One place decides which providers and transports exist, so the REPL, the CLI
one-liners and the tests all get the same session for the same flags.
"""

from __future__ import annotations

from collections.abc import Callable

from relay_repl.session.core.gate import ApproveFn, TerminalGate
from relay_repl.store.ledger import Ledger
from relay_repl.agents.discovery import StaticProvider
from relay_repl.session.session import Session


def make_session(
    *,
    fake: bool = False,
    discover: bool = True,
    approve: ApproveFn | None = None,
    echo: Callable[[str], None] | None = print,
    ledger: Ledger | None = None,
    interrupt: bool = False,
) -> Session:
    from relay_repl.transports.registry import TransportContext, build_transports

    providers: list = []
    if discover:
        from relay_repl.agents import lazy_providers

        providers.extend(lazy_providers())  # a kind's package loads when it is discovered (finder: only the one a send names)
    session = Session(
        ledger=ledger or Ledger.default(),
        approve=approve or TerminalGate(),
        providers=providers,
        echo=echo,
    )
    inbox = lambda: session.inbox_server  # noqa: E731 - late-bound: the inbox opens after the session exists
    registration = lambda: session.registration  # noqa: E731
    # every registered transport (entry points `relay_repl.transports`): none is named here
    transports = build_transports(TransportContext(inbox=inbox, registration=registration, interrupt=interrupt))
    if fake:
        from relay_repl.transports.fake import InMemoryTransport, fake_target

        session.providers.append(StaticProvider("fake", [fake_target()]))
        transports.append(InMemoryTransport())
    for t in transports:
        session.transports[t.name] = t  # installs the object; session.transports hands out handles
    from relay_repl.session.core.unfinished import sweep_interrupted

    # sends a killed process left without an outcome (a read-only command records nothing)
    found = [] if session.ledger.read_only else sweep_interrupted(session.ledger)
    if found and echo is not None:
        echo(f"relay: the ledger records {len(found)} send(s) interrupted before an outcome: {', '.join(found)} "
             "(`relay why ID` shows how far each got)")
    return session
