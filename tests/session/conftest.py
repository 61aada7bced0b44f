"""Fixtures shared by the session tests."""

from __future__ import annotations

import pytest

from tests.support.sshd import sshd_host


@pytest.fixture
def h2(tmp_path, monkeypatch, relay_home):
    """A second "host": a real sshd in its own network namespace (the lab's set-up), with this
    side's agent homes pointed at empty directories so only the host's sessions are listed."""
    root = tmp_path / "lab"
    with sshd_host(root, tmp_path / "h2home"):
        monkeypatch.setenv("RELAY_LAB_DIR", str(root))
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "local-claude"))
        monkeypatch.setenv("CODEX_HOME", str(tmp_path / "local-codex"))
        yield root


@pytest.fixture
def mcp():
    """A real `relay mcp` process on a pipe, closed after the test if it still runs."""
    from tests.support.mcp_pipe import McpPipe

    pipe = McpPipe()
    yield pipe
    if pipe.proc.poll() is None:
        pipe.close()
