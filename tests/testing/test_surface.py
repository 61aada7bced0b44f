"""`relay_repl.testing`: the doubles a plugin author's test imports (issue 35). The list is pinned
here, as tests/test_public_surface.py pins `relay_repl` and `relay_repl.plugins`: each name is the
product's own object (never a copy), resolved lazily, and importing `relay_repl` still loads
nothing of it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import relay_repl.testing

TESTING = ["Ledger", "InMemoryTransport", "fake_target", "ScriptedGate", "DenyGate", "ReplayIO", "HostileHost",
           "HOST", "standin_ssh", "ClaudeSessionReplay", "codex_cli", "private_lab_home"]


def test_the_testing_list_is_pinned():
    assert relay_repl.testing.__all__ == TESTING
    assert list(relay_repl.testing._HOMES) == TESTING


def test_every_testing_name_is_the_object_its_home_holds():
    from relay_repl.session.core import gate
    from relay_repl.store import ledger
    from relay_repl.testing import hostile_host, hosts, labs, panes, replay
    from relay_repl.transports import fake, tmux

    t = relay_repl.testing
    assert (t.Ledger, t.InMemoryTransport, t.fake_target) == (ledger.Ledger, fake.InMemoryTransport, fake.fake_target)
    assert (t.ScriptedGate, t.DenyGate, t.standin_ssh) == (gate.ScriptedGate, gate.DenyGate, hostile_host.standin_ssh)
    assert (t.HostileHost, t.HOST, t.private_lab_home) == (hosts.HostileHost, hosts.HOST, labs.private_lab_home)
    assert (t.ClaudeSessionReplay, t.codex_cli) == (replay.ClaudeSessionReplay, replay.codex_cli)
    assert t.ReplayIO is panes.ReplayIO and issubclass(t.ReplayIO, tmux.PaneIO)
    assert set(TESTING) <= set(dir(t))
    with pytest.raises(AttributeError):
        t.NoSuchName  # noqa: B018 - a miss is the AttributeError hasattr and import expect


def test_importing_relay_repl_loads_none_of_it_and_the_package_alone_loads_only_itself():
    probe = ("import sys; before = set(sys.modules); import relay_repl, relay_repl.plugins; "
             "first = sorted(set(sys.modules) - before); import relay_repl.testing; "
             "second = sorted(set(sys.modules) - before); import json; print(json.dumps([first, second]))")
    first, second = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                              check=True).stdout)
    assert first == ["relay_repl", "relay_repl.plugins"]
    assert second == ["relay_repl", "relay_repl.plugins", "relay_repl.testing"]


def test_the_ledger_in_memory_is_a_writable_ledger_and_leaves_no_file(tmp_path, monkeypatch):
    from relay_repl.store.ledger import Ledger

    monkeypatch.chdir(tmp_path)
    a, b = Ledger.in_memory(), Ledger.in_memory()
    try:
        seq = a.event("sent", delivery="d1", relay_id="r1", data={"n": 1})
        assert [(e.seq, e.kind, e.relay_id, e.data) for e in a.events()] == [(seq, "sent", "r1", {"n": 1})]
        assert b.events() == [] and not a.read_only  # each its own database
    finally:
        a.close()
        b.close()
    assert list(tmp_path.iterdir()) == []  # no `:memory:` file, no -wal beside it
