"""The verified-versions policy: read from the adapters, enforced on `--version`."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

import relay_repl.agents.versions as versions
from relay_repl.agents.adapter import load_adapter
CLAUDE, CODEX = "claude-code", "codex"
from relay_repl.core.errors import PolicyRefusal


def test_verified_versions_come_from_the_adapters():
    for kind in (CLAUDE, CODEX):
        assert versions.verified_version(kind) == load_adapter(kind).verified_versions[-1]


def _fake_client(tmp_path: Path, name: str, output: str) -> Path:
    p = tmp_path / name
    p.write_text(f"#!/bin/sh\necho '{output}'\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def test_require_verified_accepts_only_the_pinned_version(tmp_path):
    good = _fake_client(tmp_path, "claude", "2.1.328 (Claude Code)")
    assert versions.require_verified(CLAUDE, good) == "2.1.328"
    bad = _fake_client(tmp_path, "codex", "codex-cli 0.170.0")
    with pytest.raises(PolicyRefusal, match="0.170.0 is not verified"):
        versions.require_verified(CODEX, bad)
    with pytest.raises(PolicyRefusal, match="not found"):
        versions.require_verified(CODEX, tmp_path / "missing")
    with pytest.raises(ValueError):
        versions.require_verified("gemini")
    assert versions.verified_versions() == {CLAUDE: "2.1.332", CODEX: "0.171.0", "gemini-cli": "0.61.0"}


def test_client_version_uses_path(tmp_path, monkeypatch):
    _fake_client(tmp_path, "codex", "codex-cli 0.169.0")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert versions.client_version(CODEX) == "0.169.0"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert versions.client_version(CLAUDE) is None
