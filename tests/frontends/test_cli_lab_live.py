"""Live: `relay --lab CMD` uses the lab as it is; only `relay lab up` (and the REPL's start)
start what is missing, and never a live session (issue 11, item 4).

One private lab for the module: these tests SIGKILL its clients. Every run of
`relay --lab targets --json` is parsed whole as JSON (stdout holds nothing else).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from libtmux.test.retry import retry_until

import relay_repl.agents.codex.lab as codex_lab
import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
import relay_repl.lab.procs as procs
from relay_repl.testing.labs import private_lab_home

pytestmark = pytest.mark.live

RELAY = [sys.executable, "-m", "relay_repl"]


UNLOAD_DELAY = 5
"""`thread_unload_delay_secs` of this lab's Codex daemon: a thread whose TUI was SIGKILLed is
unloaded ~5 s later instead of Codex's default 40-60 s (adapters/codex.md, Liveness), which step 4
waits for. Only this private lab: other labs' tests rely on a detached thread staying loaded."""


@pytest.fixture(scope="module")
def lab_home(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RELAY_LAB_CODEX_UNLOAD_DELAY", str(UNLOAD_DELAY))
        with private_lab_home(tmp_path_factory, "cli-lab") as home:
            yield home


@pytest.fixture(autouse=True)
def _in_lab_home(request, lab_home, monkeypatch):
    if "relay_home" in request.fixturenames:
        request.getfixturevalue("relay_home")
    monkeypatch.setenv("RELAY_HOME", str(lab_home))


def relay(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    # The operator's shell: RELAY_HOME only, none of the lab's variables (`--lab` must find it).
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_RUNTIME_DIR", "RELAY_TMUX_SOCKET", "RELAY_LAB_DIR")}
    return subprocess.run([*RELAY, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout, env=env)


def targets_json() -> list[dict]:
    res = relay("--lab", "targets", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)  # the whole stdout: progress never lands there


def lab_pids(st) -> dict[str, object]:
    """Every process identity of a lab that must not change when nothing was asked to start."""
    out: dict[str, object] = {"stub": st.stub.pid, "tmux": st.tmux_server_pid}
    for s in st.sessions:
        out[s.name] = (s.pid, s.proc_start, s.session_id)
        if codex_lab.lab_facts(s).daemon_pid:
            out["codex-daemon"] = codex_lab.lab_facts(s).daemon_pid
    return out


def by_name(rows: list[dict], kind: str, name: str) -> list[dict]:
    return [r for r in rows if r["kind"] == kind and r["name"] == name]


def test_targets_json_healthy_then_one_client_sigkilled_then_lab_up_then_down(lab_home):
    st = launcher.ensure_lab(claude=1, codex=1, progress=lambda m: None)
    assert st.all_alive
    before = lab_pids(st)

    # 1. healthy: valid JSON, both live
    rows = targets_json()
    alpha, beta = st.session("alpha"), st.session("beta")
    assert [r["pid"] for r in by_name(rows, "claude-code", "alpha") if r["live"]] == [alpha.pid]
    assert [r["address"] for r in by_name(rows, "codex", "beta") if r["live"]] == [beta.session_id]
    assert lab_pids(launcher.status()) == before

    # 2. Claude SIGKILLed: still valid JSON, the dead one listed live=false, nothing restarted
    killed = helpers.kill9("alpha")
    res = relay("--lab", "targets", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert "alpha" in res.stderr  # the note that it is not running goes to stderr
    dead = [r for r in rows if r["pid"] == killed]
    assert dead and all(r["live"] is False for r in dead), rows
    assert not [r for r in by_name(rows, "claude-code", "alpha") if r["live"]]
    assert [r["address"] for r in by_name(rows, "codex", "beta") if r["live"]] == [beta.session_id]
    after = launcher.status()
    assert not procs.is_alive(killed)
    assert {k: v for k, v in lab_pids(after).items() if k != "alpha"} == \
        {k: v for k, v in before.items() if k != "alpha"}
    assert after.session("alpha").alive is False
    assert procs.is_alive(after.stub.pid) and procs.is_alive(beta.pid, beta.proc_start)

    # the other read-only commands do not start it either
    for args in (("whoami", "--json"), ("log", "--json")):
        res = relay("--lab", *args)
        assert res.returncode == 0, res.stderr
        for line in filter(None, res.stdout.splitlines() if args[0] == "log" else [res.stdout]):
            json.loads(line)
    assert launcher.status().session("alpha").alive is False

    # 3. `relay lab up` starts only what is missing: alpha again, beta untouched
    res = relay("lab", "up")
    assert res.returncode == 0, res.stderr
    assert "restarting alpha" in res.stderr and "restarting beta" not in res.stderr
    repaired = launcher.status()
    assert repaired.all_alive
    assert repaired.session("alpha").pid not in (None, killed)
    assert {k: v for k, v in lab_pids(repaired).items() if k != "alpha"} == \
        {k: v for k, v in before.items() if k != "alpha"}
    rows = targets_json()
    assert [r["pid"] for r in by_name(rows, "claude-code", "alpha") if r["live"]] == [repaired.session("alpha").pid]

    # a healthy lab: `relay lab up` changes nothing at all
    res = relay("lab", "up")
    assert res.returncode == 0, res.stderr
    assert "reused as it is" in res.stderr and "restarting" not in res.stderr
    assert lab_pids(launcher.status()) == lab_pids(repaired)

    # 4. the Codex TUI SIGKILLed: its thread stays hosted by the daemon (live, no pane) until it
    #    unloads it; nothing restarts; `relay lab up` resumes that same thread in a new TUI
    killed = helpers.kill9("beta")
    rows = targets_json()
    assert not [r for r in rows if r["pid"] == killed]
    assert all(r["pane"] is None for r in by_name(rows, "codex", "beta")), rows
    assert {k: v for k, v in lab_pids(launcher.status()).items() if k != "beta"} == \
        {k: v for k, v in lab_pids(repaired).items() if k != "beta"}
    # ... until the daemon unloads the thread (UNLOAD_DELAY here; 40-60 s by default): then it is stale
    def unloaded() -> bool:
        nonlocal rows
        rows = targets_json()
        return not [r for r in by_name(rows, "codex", "beta") if r["live"]]

    retry_until(unloaded, 150, interval=5, raises=False)  # each look runs `relay targets`: not more often
    assert [r["live"] for r in by_name(rows, "codex", "beta")] == [False], rows
    assert {k: v for k, v in lab_pids(launcher.status()).items() if k != "beta"} == \
        {k: v for k, v in lab_pids(repaired).items() if k != "beta"}
    res = relay("lab", "up")
    assert res.returncode == 0, res.stderr
    assert "restarting beta" in res.stderr and "restarting alpha" not in res.stderr
    resumed = launcher.status()
    assert resumed.all_alive and resumed.session("beta").pid != killed
    assert resumed.session("beta").session_id == beta.session_id
    assert {k: v for k, v in lab_pids(resumed).items() if k != "beta"} == \
        {k: v for k, v in lab_pids(repaired).items() if k != "beta"}
    rows = targets_json()
    assert [r["pane"] for r in by_name(rows, "codex", "beta") if r["live"]] == [resumed.session("beta").pane_id]

    # 5. the Codex daemon SIGKILLed: the thread is listed live=false, nothing restarts; then
    #    `relay lab up` starts only the daemon and the waiting TUI reconnects (its pid kept)
    daemon = codex_lab.lab_facts(resumed.session("beta")).daemon_pid
    os.kill(daemon, signal.SIGKILL)
    assert not procs.wait_gone([daemon], 5.0)
    rows = targets_json()
    assert [r["live"] for r in by_name(rows, "codex", "beta")] == [False], rows
    assert [r["pid"] for r in by_name(rows, "claude-code", "alpha") if r["live"]] == [repaired.session("alpha").pid]
    res = relay("lab", "up")
    assert res.returncode == 0, res.stderr
    assert "Codex daemon is gone" in res.stderr and "restarting" not in res.stderr
    again = launcher.status()
    assert again.all_alive
    assert again.session("beta").pid == resumed.session("beta").pid  # the live TUI was kept
    assert codex_lab.lab_facts(again.session("beta")).daemon_pid not in (None, daemon)
    assert again.session("alpha").pid == repaired.session("alpha").pid
    rows = targets_json()
    assert [r["address"] for r in by_name(rows, "codex", "beta") if r["live"]] == [beta.session_id]

    # 6. lab down: still valid JSON (no lab targets), nothing started
    res = relay("lab", "down")
    assert res.returncode == 0, res.stderr
    res = relay("--lab", "targets", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == []
    assert "no lab running" in res.stderr
    assert launcher.status() is None
