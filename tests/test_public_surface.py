"""The public surface (issue 35): `relay_repl` for notebooks, recipes and scripts, `relay_repl.plugins`
for agent-kind and transport packages. Both lists are pinned here, so a name leaves them only on
purpose; each name resolves lazily (importing `relay_repl` loads nothing more, so start-up is
unchanged), and every shipped recipe imports from the surface only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import relay_repl
import relay_repl.plugins

RECIPES = Path(__file__).resolve().parents[1] / "recipes"

PUBLIC = ["__version__", "Session", "Target", "Delivery", "DeliveryState", "Plan", "Envelope", "visible",
          "RelayError", "UsageError", "EnvelopeError", "DiscoveryError", "UnknownTarget", "AmbiguousTarget",
          "StaleTarget", "PolicyRefusal", "Declined", "LoopHalt", "TransportError", "LedgerError", "HostError"]
PLUGINS = ["AGENTS_GROUP", "TRANSPORTS_GROUP", "PREFETCH_GROUP", "AgentKind", "AgentKindBase", "KindFacts", "capability",
           "DiscoveryBase", "ProviderDiscovery", "ScreenBase", "EvidenceBase", "RepliesBase", "ChecksBase",
           "TransportsBase", "LabDriver", "LabDriverBase", "AdapterSpec",
           "Provider", "KindProvider", "InboxListing", "ScreenReading", "Check", "ClientPin", "LabSpec",
           "LabContext", "LabLaunch", "LabPane", "LabReady", "Transport", "TransportContext", "Capabilities", "Look",
           "StageLog", "Approval", "Delivery", "DeliveryState", "Evidence", "Envelope", "Plan", "Target"]


def test_the_public_lists_are_pinned():
    assert relay_repl.__all__ == PUBLIC
    assert relay_repl.plugins.__all__ == PLUGINS
    assert relay_repl.__all__[1:] == list(relay_repl._HOMES) and PLUGINS == list(relay_repl.plugins._HOMES)


def test_every_public_name_is_the_object_its_home_holds():
    from relay_repl.agents import registry as agents
    from relay_repl.core import controls, errors
    from relay_repl.session.session import Session
    from relay_repl.system import prefetch
    from relay_repl.transports import registry as transports
    from relay_repl.transports.base import Transport

    from relay_repl import Session as S, visible  # the line a notebook writes

    assert S is Session and visible is controls.visible
    for name in PUBLIC[8:]:  # the errors a user catches: the tree's own classes, RelayError at the root
        assert getattr(relay_repl, name) is getattr(errors, name) and issubclass(getattr(relay_repl, name),
                                                                                  errors.RelayError)
    assert relay_repl.plugins.Transport is Transport and relay_repl.plugins.AGENTS_GROUP == agents.GROUP
    assert (relay_repl.plugins.TRANSPORTS_GROUP, relay_repl.plugins.PREFETCH_GROUP) == (transports.GROUP, prefetch.GROUP)
    for mod, names in ((relay_repl, PUBLIC), (relay_repl.plugins, PLUGINS)):
        assert all(getattr(mod, n) is not None for n in names) and set(names) <= set(dir(mod))
        with pytest.raises(AttributeError):
            mod.NoSuchName  # noqa: B018 - a miss is the AttributeError hasattr and import expect


def test_importing_the_package_or_its_plugins_list_loads_nothing_more():
    probe = ("import sys; before = set(sys.modules); import relay_repl, relay_repl.plugins; "
             "loaded = sorted(set(sys.modules) - before); import json; print(json.dumps(loaded))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout)
    assert loaded == ["relay_repl", "relay_repl.plugins"]


def surface_imports(source: str) -> list[str]:
    """Each import of relay_repl a module makes beyond the public surface."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith("relay_repl.")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "relay_repl":
            if node.module == "relay_repl":
                bad += [f"relay_repl.{a.name}" for a in node.names if a.name not in PUBLIC]
            else:
                bad.append(node.module)
    return bad


def test_every_shipped_recipe_imports_only_the_public_surface():
    notebooks = sorted(p for p in RECIPES.glob("*.py") if p.name != "__init__.py")
    assert len(notebooks) >= 3  # handoff, keep-answer, triage
    bad = {p.name: surface_imports(p.read_text(encoding="utf-8")) for p in notebooks}
    assert {k: v for k, v in bad.items() if v} == {}
    assert surface_imports("from relay_repl.core.controls import visible\nimport relay_repl.session\n"
                           "from relay_repl import _lazy, Session\n") == [
        "relay_repl.core.controls", "relay_repl.session", "relay_repl._lazy"]
