"""Live: the lab runs the real pinned clients; status, helpers, crash recovery, clean down.

One lab per module (RELAY_HOME in a tmp dir). The clients come from
`$RELAY_LAB_CLIENTS`, else the operator's default client cache (`relay lab install`
puts them there); the module is skipped when they cannot be installed.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest

from relay_repl.testing.labs import private_lab_home

import relay_repl.store.paths as paths
import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
import relay_repl.lab.procs as procs
from relay_repl.agents.claude_code.agent import KIND as CLAUDE
from relay_repl.agents.codex.agent import KIND as CODEX
import relay_repl.agents.claude_code.lab as claude_lab
import relay_repl.agents.codex.lab as codex_lab
from relay_repl.lab.layout import Layout, tmux_socket_path

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def lab_home(tmp_path_factory):
    with private_lab_home(tmp_path_factory, "lab") as home:
        yield home


@pytest.fixture(autouse=True)
def _in_lab_home(request, lab_home, monkeypatch):
    # conftest gives every test its own RELAY_HOME; these tests share the module's lab.
    if "relay_home" in request.fixturenames:
        request.getfixturevalue("relay_home")
    monkeypatch.setenv("RELAY_HOME", str(lab_home))


@pytest.fixture(scope="module")
def lab(lab_home):
    t0 = time.monotonic()
    st = launcher.up(claude=1, codex=1, progress=lambda m: None)
    st.ready_at = st.ready_at or time.time()
    print(f"lab up in {time.monotonic() - t0:.1f}s")
    return st


def _stub():
    from relay_repl.lab.stubs.client import SyncStubClient

    st = launcher.status()
    assert st is not None
    return SyncStubClient(st.stub.control)


def test_status_lists_one_live_claude_and_one_live_codex(lab):
    st = launcher.status()
    assert st is not None and st.phase == "ready"
    assert st.lab_dir == str(paths.lab_dir())
    assert st.stub.alive and procs.is_alive(st.stub.pid)
    assert st.tmux_socket.startswith("relay-lab-")
    (claude,) = st.of_kind(CLAUDE)
    (codex,) = st.of_kind(CODEX)
    assert (claude.name, codex.name) == ("alpha", "beta")
    for s in (claude, codex):
        assert s.alive and s.pid and procs.is_alive(s.pid)
        assert s.pane_id and s.pane_id.startswith("%")
    assert claude.pid == claude.pane_pid
    assert claude.transcript and claude.transcript.endswith(f"/{claude.session_id}.jsonl")
    assert Path(claude_lab.lab_facts(claude).messaging_socket or "").is_socket()
    daemon = codex_lab.lab_facts(codex).daemon_pid
    assert codex.session_id and daemon and procs.is_alive(daemon)
    assert codex.pid != daemon
    lay = Layout.at(st.lab_dir)
    assert (codex_lab.home(lay.root) / "thread-writer-locks" / f"{codex.session_id}.lock").exists()
    assert '"thread_name":"beta"' in (codex_lab.home(lay.root) / "session_index.jsonl").read_text()
    if st.netns:
        assert st.netns_id and procs.net_ns(claude.pid) == st.netns_id == procs.net_ns(daemon)
        assert procs.net_ns(os.getpid()) != st.netns_id


def test_env_points_at_the_lab(lab):
    env = launcher.env()
    lay = Layout.at(lab.lab_dir)
    assert env["CLAUDE_CONFIG_DIR"] == str(claude_lab.config_dir(lay.root))
    assert env["CODEX_HOME"] == str(codex_lab.home(lay.root))
    assert env["XDG_RUNTIME_DIR"] == str(lay.runtime_dir)
    assert env["RELAY_TMUX_SOCKET"] == lab.tmux_socket
    assert Path(env["PATH"].split(":")[0], "claude").exists()
    st = launcher.status()
    assert Path(claude_lab.lab_facts(st.session("alpha")).messaging_socket or "").parent == Path(env["XDG_RUNTIME_DIR"]) / "cc-socks"


def test_tools_run_without_dialogs_on_their_own_stub_ports(lab):
    stub = _stub()
    stub.tool_call("alpha", "Bash", {"command": "echo lab-bash-ok", "description": "probe"}, then_text="bash done")
    stub.tool_call("beta", "exec_command", {"cmd": "echo lab-exec-ok", "yield_time_ms": 10000},
                   then_text="exec done")
    for name in ("alpha", "beta"):
        helpers.submit(name, f"probe tools in {name}")
    for name, marker in (("alpha", "lab-bash-ok"), ("beta", "lab-exec-ok")):
        reqs = stub.requests(name, min_count=2, timeout=30)
        results = [r for r in reqs if r.tool_result]
        assert results, f"{name}: no tool result reached its own stub port"
        assert marker in str(results[-1].body), f"{name}: tool output missing"
        helpers.wait_idle(name, 30)
        screen = helpers.capture(name)
        assert "Do you want to proceed" not in screen and "Would you like to run" not in screen


def test_helpers_busy_draft_copy_mode(lab):
    helpers.make_busy("alpha", 3)
    assert helpers.is_busy("alpha")
    helpers.make_busy("beta", 3)
    assert helpers.is_busy("beta")
    helpers.wait_idle("alpha", 30)
    helpers.wait_idle("beta", 30)
    helpers.put_draft("beta", "an unsent draft")
    assert "an unsent draft" in helpers.capture("beta")
    helpers.copy_mode("alpha")
    assert helpers.pane("alpha").cmd("display-message", "-p", "#{pane_in_mode}").stdout == ["1"]


def test_ensure_lab_reuses_a_healthy_lab(lab):
    before = launcher.status()
    again = launcher.ensure_lab(claude=1, codex=1, progress=lambda m: None)
    assert again.started_at == before.started_at
    assert again.session("alpha").pid == before.session("alpha").pid


def test_crash_recovery_kill_stub_and_tui_then_up(lab):
    old = launcher.status()
    lay = Layout.at(old.lab_dir)
    claude = old.session("alpha")
    os.kill(old.stub.pid, signal.SIGKILL)
    helpers.kill9("alpha")
    stale = list((claude_lab.config_dir(lay.root) / "sessions").glob(f"{claude.pid}.*"))
    assert stale, "kill -9 should leave the registry record behind"
    assert not launcher.status().all_alive
    new = launcher.up(claude=1, codex=1, progress=lambda m: None)
    assert new.all_alive
    assert not procs.is_alive(old.stub.pid) and not procs.is_alive(old.session("beta").pid)
    assert codex_lab.lab_facts(new.session("beta")).daemon_pid != codex_lab.lab_facts(old.session("beta")).daemon_pid
    assert not any(p.exists() for p in stale)
    assert {s.pid for s in new.sessions}.isdisjoint({s.pid for s in old.sessions})


def _procs_referencing(lab_dir: str) -> list[tuple[int, str]]:
    me = procs.ancestors()
    out = []
    for pid in procs.all_pids():
        if pid in me:
            continue
        env = procs.environ(pid)
        cmd = " ".join(procs.cmdline(pid))
        if lab_dir in cmd or any(lab_dir in v for v in env.values()):
            out.append((pid, cmd[:120]))
    return out


def test_down_leaves_nothing_and_second_down_is_noop(lab, capsys):
    st = launcher.status()
    lay = Layout.at(st.lab_dir)
    daemon_targets = codex_lab.daemon_targets(lay.root)
    assert launcher.down() is True
    assert _procs_referencing(st.lab_dir) == []
    assert not tmux_socket_path(st.tmux_socket).exists()
    assert not any(t.exists() for t in daemon_targets)
    leftovers = [p for p in lay.root.rglob("*") if not p.is_relative_to(lay.cache)]
    assert leftovers == []
    sockets = [p for p in lay.root.rglob("*") if stat.S_ISSOCK(p.lstat().st_mode)]
    assert sockets == []
    assert launcher.status() is None
    capsys.readouterr()
    assert launcher.down() is False
    assert "no lab running" in capsys.readouterr().out
