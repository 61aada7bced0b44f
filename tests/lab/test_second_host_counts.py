"""The second host's lab is counted as `relay lab up` counts (issue 19: nothing outside the agent
packages names a kind): by each lab kind's count flag or `more={kind: n}`, every lab kind passed
to its `relay lab up`, and every kind's client home dropped from the environment it inherits."""

from __future__ import annotations

import subprocess

import pytest

from relay_repl.core.errors import LabError
from relay_repl.lab import second_host
from relay_repl.lab.kind_sessions import count_flags, default_counts
from relay_repl.lab.layout import Layout, client_home_vars


def test_every_lab_kind_is_counted_by_its_flag(tmp_path, monkeypatch):
    seen: list[list[str]] = []

    def run(cmd, **kw):
        seen.append(cmd)
        assert not (client_home_vars() & set(kw["env"])), "a kind's client home leaked into the second host"
        return subprocess.CompletedProcess(cmd, 1, "", "stopped here by the test")

    for var in client_home_vars():
        monkeypatch.setenv(var, "/the/operators/own")
    monkeypatch.setattr(second_host, "available", lambda: None)
    monkeypatch.setattr(second_host.subprocess, "run", run)
    flags = count_flags()
    some = next(iter(flags.values())).facts.kind
    with pytest.raises(LabError, match="stopped here by the test"):
        second_host.up(Layout.at(tmp_path / "lab"), progress=lambda m: None, more={some: 3})
    argv = seen[0][seen[0].index("up") + 1:]
    want = {**default_counts(), some: 3}
    assert dict(zip(argv[::2], argv[1::2])) == {f"--{f}": str(want.get(k.facts.kind, 0)) for f, k in flags.items()}


def test_a_login_on_the_second_host_gets_its_home_not_the_operators(tmp_path, monkeypatch):
    """sshd runs the login shell, and bash run by sshd reads $HOME/.bashrc: with the operator's HOME,
    each `relay serve --stdio` start ran the operator's own dotfiles (issue 33's cold figure)."""
    monkeypatch.setenv("HOME", "/the/operators/own")
    monkeypatch.setattr(second_host.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, "", ""))
    home = tmp_path / "lab-h2"
    env = second_host._start_sub_lab(home, {}, progress=lambda m: None)
    assert env["HOME"] == str(Layout.at(home / "lab").home)
    assert env["RELAY_HOME"] == str(home)
