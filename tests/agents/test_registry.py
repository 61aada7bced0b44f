"""The agent-kind registry: filled from the `relay_repl.agents` entry points, one AgentKind each."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from relay_repl.agents import AgentKind, agent_for, default_providers, registry
from relay_repl.agents.adapter import load_adapter


def test_the_kinds_come_from_the_entry_point_group():
    declared = {ep.name for ep in entry_points(group=registry.GROUP)}
    assert {"claude-code", "codex"} <= declared
    assert set(registry.kind_names()) == declared
    for k in registry.kinds():
        assert isinstance(k, AgentKind)
        assert agent_for(k.facts.kind) is k
        assert registry.kind_by_prefix(k.facts.prefix) is k
        assert k.facts.prefix == load_adapter(k.facts.kind).prefix


def test_every_kind_answers_the_whole_protocol():
    for k in registry.kinds():
        pin = k.facts.pin()
        assert pin.version == k.facts.verified_versions()[-1]
        assert pin.binary and pin.install_hint.endswith(pin.version)
        assert k.transports.specs() and all(t.name for t in k.transports.specs())
        assert k.facts.address_rule.startswith(f"{k.facts.prefix}:")
        assert k.screen.classifier() is not None
        lab = k.lab_driver().spec
        assert lab is not None and lab.count_flag
        assert k.checks.provenance in ("kernel", "none")


def test_the_lab_installs_what_each_kind_pins():
    from relay_repl.lab import install

    deps = install.manifest(install.VERIFIED_VERSIONS)["dependencies"]
    for k in registry.kinds():
        pin = k.facts.pin()
        assert deps.get(pin.npm_package) == pin.version
    lock = install.merged_lock(install.VERIFIED_VERSIONS)
    assert lock is not None and lock["packages"][""]["dependencies"] == deps


def test_providers_come_from_every_kind(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": "/nonexistent"}
    kinds_seen = {p.kind for p in default_providers(env)}
    assert kinds_seen == set(registry.kind_names())


def test_an_unknown_kind_is_none_and_a_broken_entry_point_is_one_line(monkeypatch):
    assert agent_for("no-such-kind") is None
    from importlib.metadata import EntryPoint

    broken = EntryPoint(name="broken", value="relay_repl_no_such_module:Kind", group=registry.GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: {"broken": broken})
    registry._load.cache_clear()
    try:
        with pytest.raises(registry.RegistryError, match="does not load"):
            registry.kind_for("broken")
    finally:
        registry._load.cache_clear()


def test_target_detail_is_the_kinds_own_frozen_model():
    from pydantic import ValidationError

    from relay_repl.core.target import AgentDetail, Target

    t = Target(kind="codex", name="beta", address="x", identified_by="test", detail={"thread_id": "abc", "plan_mode": True})
    assert type(t.detail) is registry.kind_for("codex").facts.detail_model and t.detail.plan_mode  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        t.detail.plan_mode = False  # type: ignore[attr-defined]  # frozen like the target
    with pytest.raises(ValidationError, match="thread_id"):
        Target(kind="claude-code", name="a", address="x", identified_by="test", detail={"thread_id": "abc"})
    assert Target.model_validate_json(t.model_dump_json()) == t  # the tag is the kind: plain data round-trips
    assert isinstance(Target(kind="no-such-kind", name="a", address="x", identified_by="t").detail, AgentDetail)
    assert "dict" not in str(Target.model_fields["detail"].annotation)


def test_the_session_installs_the_transports_the_entry_points_name(tmp_path):
    from relay_repl.session.app import make_session
    from relay_repl.store.ledger import Ledger
    from relay_repl.transports.registry import GROUP

    declared = {ep.name for ep in entry_points(group=GROUP)}
    assert {"tmux", "codex-queue", "claude-code-socket", "claude-code-message"} <= declared
    s = make_session(discover=False, echo=None, ledger=Ledger(tmp_path / "l.sqlite"))
    assert set(s.transports) == declared
    offered = {t.name for k in registry.kinds() for t in k.transports.specs()}
    assert offered <= declared  # every transport a kind offers is installed
