"""The error tree at the seams: the operator reads one sentence with the next step, never a type name."""

from __future__ import annotations

import sqlite3

import pytest

from relay_repl.core.errors import (DaemonError, DiscoveryError, LedgerError, PaneGone, RelayError, TmuxError,
                                    TransportError, describe)


def test_every_error_relay_raises_is_in_the_tree():
    for cls in (DaemonError, LedgerError, PaneGone, TmuxError):
        assert issubclass(cls, RelayError)
    assert issubclass(DaemonError, DiscoveryError) and issubclass(PaneGone, TransportError)


@pytest.mark.parametrize("exc, expect", [
    (sqlite3.OperationalError("database is locked"), "a database could not be read or written"),
    (FileNotFoundError(2, "No such file or directory", "/run/x.sock"), "/run/x.sock does not exist"),
    (PermissionError(13, "Permission denied", "/run/x.sock"), "permission denied"),
    (ConnectionRefusedError(111, "Connection refused"), "system error"),
    (TimeoutError(), "timed out"),
    (KeyError("sessionId"), "unexpected failure"),
    (TransportError("pane %3 is gone: re-discover"), "pane %3 is gone: re-discover"),
])
def test_describe_says_what_happened_without_a_type_name(exc, expect):
    text = describe(exc, "stage write of tmux")
    assert expect in text
    assert type(exc).__name__ not in text
    assert "\n" not in text


@pytest.mark.anyio
async def test_a_transport_exception_reaches_the_operator_as_one_sentence(tmp_path):
    from relay_repl.agents.discovery import StaticProvider
    from relay_repl.core.delivery import DeliveryState
    from relay_repl.core.target import Me
    from relay_repl.session.core.gate import ScriptedGate
    from relay_repl.session.session import Session
    from relay_repl.store.ledger import Ledger
    from relay_repl.transports.fake import InMemoryTransport, fake_target

    class Broken(InMemoryTransport):
        async def send(self, delivery, target, payload, log, approval=None):
            raise sqlite3.OperationalError("database is locked")

    led = Ledger(tmp_path / "l.sqlite")
    s = Session(ledger=led, approve=ScriptedGate([True]), me=Me(address="me"),
                providers=[StaticProvider("fake", [fake_target()])], transports=[Broken()])
    d = await s.send("fake:inbox", "hello")
    assert d.state is DeliveryState.FAILED
    why = d.evidence[-1].detail if d.evidence else d.reason
    assert "a database could not be read or written" in (d.reason or why)
    assert "OperationalError" not in (d.reason or "") and "OperationalError" not in why


def test_first_relay_error_finds_relays_own_error_at_any_depth_of_a_task_groups_errors():
    from relay_repl.core.errors import RelayError, UnknownTarget, first_relay_error

    own = UnknownTarget("no target named nosuch:x: run `relay targets`")
    assert first_relay_error(own) is own
    nested = BaseExceptionGroup("tg", [ValueError("bug"), BaseExceptionGroup("inner", [own])])
    assert first_relay_error(nested) is own
    assert first_relay_error(ValueError("bug")) is None
    assert first_relay_error(BaseExceptionGroup("tg", [KeyboardInterrupt()])) is None
    assert isinstance(first_relay_error(ExceptionGroup("g", [RelayError("x")])), RelayError)
