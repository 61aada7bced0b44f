"""A second "host" for tests: its own network namespace and sshd, no agents (lab/second_host.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def sshd_host(root: Path, home: Path) -> Iterator[Path]:
    """Namespace + veth + sshd whose logins get RELAY_HOME=`home` and this venv's relay on PATH;
    `root` gets the ssh config and hosts.toml (point RELAY_LAB_DIR at it). Skips without root/sshd."""
    from relay_repl.lab import second_host

    why = second_host.available()
    if why:
        pytest.skip(why)
    home.mkdir(parents=True, exist_ok=True)
    # HOME too: a login's shell (bash, run by sshd) reads $HOME/.bashrc, and this machine's
    # root ~/.bashrc runs `pyenv init` (0.6 s per login, several logins per test); a second host
    # has a home of its own anyway
    env = {"RELAY_HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "CLAUDE_CONFIG_DIR": str(home / "claude"), "CODEX_HOME": str(home / "codex"), "HOME": str(home)}
    second_host.up_link(root, home, env)
    try:
        yield root
    finally:
        second_host.down_link(root)
