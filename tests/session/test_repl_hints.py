"""What the REPL says when the operator reaches for an attribute on the wrong object: one sentence
with the call that works (session/core/hints.py), still an AttributeError for `hasattr` and completion."""

from __future__ import annotations

import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.errors import MisnamedAttribute, UsageError
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target

pytestmark = pytest.mark.anyio


def mk(tmp_path, answers=()):
    return Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=ScriptedGate(answers), me=Me(address="me"),
                   providers=[StaticProvider("fake", [fake_target()])], transports=[InMemoryTransport()])


async def test_wait_reply_on_the_session_names_the_delivery(tmp_path):
    s = mk(tmp_path, [True])
    d = await s.send("fake:inbox", "hello")
    with pytest.raises(MisnamedAttribute) as e:
        await s.wait_reply(d, 20)  # what the operator typed
    assert "`await d.wait_reply(20)`" in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, AttributeError) and isinstance(e.value, UsageError)
    assert callable(d.wait_reply)  # the call it names exists
    for name in ("replies", "summary", "outcome"):
        with pytest.raises(MisnamedAttribute, match=rf"`d\.{name}"):
            getattr(s, name)
        getattr(d, name)  # and is the delivery's
    with pytest.raises(MisnamedAttribute, match=r"await session\.refresh\(\)"):
        s.discover()


def test_other_misses_stay_plain_and_hasattr_still_works(tmp_path):
    s = mk(tmp_path)
    with pytest.raises(AttributeError) as e:
        s.no_such_thing  # noqa: B018
    assert not isinstance(e.value, MisnamedAttribute) and "no_such_thing" in str(e.value)
    assert not hasattr(s, "wait_reply") and hasattr(s, "send")


async def test_tables_called_as_methods_say_they_are_tables(tmp_path):
    s = mk(tmp_path)
    await s.refresh()
    with pytest.raises(UsageError, match=r"session\.targets is the table itself, not a method"):
        s.targets()
    with pytest.raises(UsageError, match=r"session\.inbox is the table itself, not a method"):
        s.inbox()
    assert "fake:inbox" in repr(s.targets)  # the attribute form works
