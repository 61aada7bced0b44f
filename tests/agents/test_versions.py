"""The verified-versions policy: read from the adapters, enforced on `--version`."""

from __future__ import annotations

import os
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


def _counting_client(tmp_path: Path, answer: str) -> tuple[Path, Path]:
    """A `claude` that answers `answer` and appends one line to a log per run (the runs counted)."""
    log = tmp_path / "runs.log"
    p = tmp_path / "claude"
    p.write_text(f"#!/bin/sh\necho run >> {log}\necho '{answer}'\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p, log


def _runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_version_started_early_is_taken_only_for_the_same_file_and_environment(tmp_path, monkeypatch):
    """issue 40: a Claude run's phase 1 starts `claude --version` early (system/prefetch.start_version);
    binary_version takes that answer only for the very question it would ask, else asks again."""
    from relay_repl.system.prefetch import start_version, version_env

    versions.clear_cache()
    exe, log = _counting_client(tmp_path, "2.1.332 (Claude Code)")
    start_version(str(exe), version_env({**os.environ, "SOMETHING_ELSE": "1"}, {}))  # not the env it runs with
    assert versions.binary_version(exe, kind=CLAUDE) == "2.1.332"
    assert _runs(log) == 2  # the early one did not answer this question: it was asked again
    versions.clear_cache()
    start_version(str(exe), version_env(dict(os.environ), {}))
    exe.write_text(exe.read_text().replace("2.1.332", "2.1.331"))  # replaced after the early start
    os.utime(exe, ns=(1, 1))
    assert versions.binary_version(exe, kind=CLAUDE) == "2.1.331"  # the file asked about now answers
    versions.clear_cache()
    import time

    time.sleep(0.2)  # every earlier process has written its line
    before = _runs(log)
    start_version(str(exe), version_env(dict(os.environ), {}))
    assert versions.binary_version(exe, kind=CLAUDE) == "2.1.331"
    assert _runs(log) == before + 1  # the early answer taken: no second process
    versions.clear_cache()
