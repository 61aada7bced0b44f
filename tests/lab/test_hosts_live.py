"""Live: `relay lab up --hosts 2` and sends to the second host's real Claude Code and Codex.

The second host is its own network namespace with its own sshd and its own lab (real
clients against their own stubs, its own RELAY_HOME); the operator's relay reaches it only
through the system's ssh, with the lab's ssh config. The plan is built on the host, shown
and answered y in a real terminal here; the reply is judged by the host's relay."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.tmuxdrive import Screen, python_env

pytestmark = [pytest.mark.live, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def lab_home(hosts_lab_home):
    """The lab with a second host, shared with test_hosts_session_live (tests/lab/conftest.py)."""
    return hosts_lab_home


@pytest.fixture
def lab2(lab, lab_home, monkeypatch):
    """The lab plus its second host (started once, reused); the test's env points at the lab."""
    import relay_repl.lab.launcher as launcher
    from relay_repl.lab import second_host

    host = second_host.up(launcher.layout(), claude=1, codex=1, progress=lambda m: None)
    return host


def relay(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env=os.environ)


def test_targets_lists_both_hosts(lab2):
    res = relay("--lab", "targets", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    local = {r["spec"] for r in rows if r["host"] is None}
    remote = {r["spec"] for r in rows if r["host"] == "h2"}
    assert {"claude:alpha", "codex:beta"} <= local
    assert {"h2/claude:alpha", "h2/codex:beta"} <= remote
    table = relay("--lab", "targets").stdout
    assert table.splitlines()[0].split()[:2] == ["HOST", "TARGET"]


def send_in_terminal(target: str, text: str) -> str:
    """`relay --lab send TARGET TEXT --want reply --wait 60` in a real terminal, each plan answered y."""
    env = python_env(**{k: os.environ[k] for k in ("RELAY_HOME", "RELAY_LAB_CLIENTS") if k in os.environ})
    cmd = f"{sys.executable} -m relay_repl --lab send {target} '{text}' --want reply --wait 60; echo EXIT=$?; sleep 60"
    screen = Screen(["bash", "-c", cmd], env)
    try:
        answered = 0
        end = time.monotonic() + 180
        while time.monotonic() < end:
            txt = screen.text()
            if re.search(r"EXIT=\d+", txt):
                return txt
            if txt.count("Proceed? [y/N]") > answered:  # one y per plan shown (listing the inbox, the send)
                answered += 1
                screen.type_line("y")
            time.sleep(0.2)  # the poll interval of this bounded wait
        raise AssertionError(f"no exit within 180s:\n{screen.text()}")
    finally:
        screen.close()


@pytest.mark.parametrize("target", ["h2/claude:alpha", "h2/codex:beta"])
def test_send_to_the_second_host_answered_y_verified_there(lab2, target):
    txt = send_in_terminal(target, f"hello {target}")
    assert "EXIT=0" in txt, txt[-3000:]
    assert "route: via ssh h2 (h2), host key" in txt and lab2.host_key_sha256 in txt  # the route, shown before y
    m = re.search(r"reply \S+ from \S+ \[host h2 says: verified by pid (\d+)[^\]]*\]: (.*)", txt)
    assert m, txt[-2000:]
    assert f"hello {target}" in m.group(2)
    # the delivery is in the HOST's ledger (it was carried out there), not in the operator's
    from relay_repl.store.ledger import Ledger

    host_ledger = Ledger(Path(lab2.home) / "ledger.sqlite")
    try:
        rid = re.search(r"relay id (\S+)\)", txt).group(1)
        kinds = {e.kind for e in host_ledger.events(relay_id=rid)}
        assert "plan" in kinds and "answer" in kinds
    finally:
        host_ledger.close()


def test_down_host_is_one_line_and_local_still_works(lab2, tmp_path):
    lab_dir = os.environ["RELAY_LAB_DIR"]
    hosts = f"{lab_dir}/hosts.toml"
    cfg = f"{lab_dir}/ssh/config"
    saved = open(hosts).read(), open(cfg).read()
    try:
        with open(cfg, "a") as fh:
            fh.write("Host gone\n  HostName 127.0.0.1\n  Port 1\n")
        with open(hosts, "a") as fh:
            fh.write('\n[hosts.gone]\ndestination = "gone"\n')
        res = relay("--lab", "targets", "--json")
        assert res.returncode == 0
        specs = {r["spec"] for r in json.loads(res.stdout)}
        assert {"claude:alpha", "h2/claude:alpha"} <= specs
        lines = [ln for ln in res.stderr.splitlines() if "gone" in ln]
        assert len(lines) == 1 and "host gone" in lines[0]
    finally:
        open(hosts, "w").write(saved[0])
        open(cfg, "w").write(saved[1])
