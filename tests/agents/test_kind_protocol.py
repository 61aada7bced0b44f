"""The agent protocol is a few capability objects (issue 35): an `AgentKind` has at most eight
members, each kind's class names only those, and its capabilities load on first use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from relay_repl.agents import registry
from relay_repl.agents.kind import MEMBERS, AgentKind, AgentKindBase, is_agent_kind

FAKE = Path(__file__).parent / "fake_kind"


def protocol_members(proto: type) -> set[str]:
    """Every member a class implementing `proto` must provide: its annotations and its own functions."""
    own = {n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")}
    return own | set(getattr(proto, "__annotations__", {}))


def implemented(cls: type) -> set[str]:
    """The public names a kind's class (and its own bases up to AgentKindBase) defines."""
    names: set[str] = set()
    for c in cls.__mro__:
        if c in (AgentKindBase, object):
            break
        names |= {n for n in vars(c) if not n.startswith("_")}
    return names


def test_an_agent_kind_has_at_most_eight_members():
    members = protocol_members(AgentKind)
    assert members == set(MEMBERS) and len(members) <= 8, sorted(members)


def test_every_kind_and_a_new_kinds_package_implement_only_protocol_members():
    sys.path.insert(0, str(FAKE))
    try:
        import relay_fake_agent
    finally:
        sys.path.remove(str(FAKE))
    classes = [type(k) for k in registry.kinds()] + [relay_fake_agent.FakeAgentKind]
    for cls in classes:
        mine = implemented(cls)
        assert mine <= set(MEMBERS) and len(mine) <= 8, (cls.__name__, sorted(mine - set(MEMBERS)))
        assert is_agent_kind(cls())
    assert len(implemented(relay_fake_agent.FakeAgentKind)) == 5  # facts, discovery, screen, checks, lab_driver


def test_a_kind_written_for_the_old_wide_protocol_is_not_an_agent_kind():
    assert not is_agent_kind(OldWideKind()) and not is_agent_kind(AgentKindBase)  # a class is not a kind


def test_a_kinds_capabilities_load_on_first_use():
    probe = ("import sys, json; from relay_repl.agents.registry import kind_for; k = kind_for('gemini-cli'); "
             "mods = ['relay_repl.agents.gemini_cli.replies', 'relay_repl.agents.gemini_cli.verify', "
             "'relay_repl.agents.gemini_cli.lab']; before = [m in sys.modules for m in mods]; "
             "k.replies; k.checks; k.lab_driver(); print(json.dumps([before, [m in sys.modules for m in mods]]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [[False, False, False], [True, True, True]]


class OldWideKind:
    """A kind written for the old protocol: flat names, a `lab_*` method per lab step."""

    kind, prefix, label = "old-kind", "old", "Old"

    def providers(self, env, panes):  # noqa: ANN001, ANN201
        return []

    def lab_launch(self, ctx, name, first):  # noqa: ANN001, ANN201
        return None


def test_the_registry_refuses_an_old_protocol_kind_in_one_line_naming_what_it_lacks(monkeypatch):
    import pytest

    from relay_repl.system.entry_points import EntryPoint

    old = EntryPoint(name="old-kind", value=f"{__name__}:OldWideKind", group=registry.GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: {"old-kind": old})
    registry._load.cache_clear()
    try:
        with pytest.raises(registry.RegistryError, match=r"is not an AgentKind: it lacks facts, discovery, screen, "
                                                         r"evidence, replies, checks, transports, lab_driver"):
            registry.kind_for("old-kind")
    finally:
        registry._load.cache_clear()
