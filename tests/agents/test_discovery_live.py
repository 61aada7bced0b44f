"""Live: discovery against the REAL pinned Claude Code and Codex clients in the lab.

conftest's shared 2+2 lab (2 Claude: alpha, beta; 2 Codex: gamma, delta) under a tmp
RELAY_HOME, not the shared 1+1 one: it needs two sessions of each kind, and in a 1+1 lab
`beta` is the Codex session. The clients come from `$RELAY_LAB_CLIENTS`, else
the default client cache; the module is skipped when they cannot be installed.

What the tests stage themselves (by typing into lab panes or calling the Codex daemon
API) is setup, not the code under test: discovery itself only reads.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import relay_repl.store.paths as paths
from relay_repl.agents import default_providers
from relay_repl.agents.claude_code import ClaudeProvider
from relay_repl.agents.codex import CodexProvider
from relay_repl.core.errors import AmbiguousTarget
import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
import relay_repl.lab.procs as procs
from relay_repl.lab.install import bin_dir
from relay_repl.lab.layout import Layout
from relay_repl.store.ledger import Ledger
from relay_repl.session.session import Session
from relay_repl.core.target import Target

pytestmark = [pytest.mark.live, pytest.mark.anyio]


# -- the lab ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab_size():
    return 2, 2


@pytest.fixture(scope="module")
def lab_home(lab_home_2x2):
    return lab_home_2x2


def lab_env() -> dict[str, str]:
    env = launcher.env()
    env["HOME"] = str(launcher.layout().home)
    return env


async def discover(env: dict[str, str] | None = None) -> list[Target]:
    out: list[Target] = []
    for p in default_providers(env or lab_env()):
        out += await p.discover()
    return out


def one(targets: list[Target], spec: str, live: bool = True) -> Target:
    hits = [t for t in targets if t.spec == spec and t.live == live]
    assert len(hits) == 1, f"{spec}: {hits} in {targets}"
    return hits[0]


async def until(fn, timeout: float = 20.0, every: float = 0.2):
    """Re-run `fn` (async) until it returns a truthy value; return that value."""
    end = time.monotonic() + timeout
    while True:
        got = await fn()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout:g}s (last: {got!r})")
        await anyio.sleep(every)


def lab_tmux(*args: str) -> subprocess.CompletedProcess[str]:
    """Run tmux against the lab server with the lab's environment (as the launcher does)."""
    lay = launcher.layout()
    extra = [os.path.dirname(p) for p in (shutil.which("node"), shutil.which("git")) if p]
    return subprocess.run(["tmux", "-L", lay.tmux_socket, "-f", "/dev/null", *args],
                          env=lay.base_env(bin_dir(), extra), capture_output=True, text=True, check=True, timeout=15)


def pane_pid_of(tmux_session: str) -> tuple[str, int]:
    out = lab_tmux("display-message", "-p", "-t", f"={tmux_session}:", "#{pane_id} #{pane_pid}").stdout.split()
    return out[0], int(out[1])


async def daemon_call(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC call on the lab's Codex daemon control socket (test staging only)."""
    from websockets.asyncio.client import unix_connect

    sock = os.path.realpath(Layout.at(paths.lab_dir()).codex_control_socket)
    async with unix_connect(sock, uri="ws://localhost/", max_size=None) as ws:
        await ws.send(json.dumps({"id": 1, "method": "initialize", "params": {
            "clientInfo": {"name": "relay-live-test", "title": "t", "version": "0"},
            "capabilities": {"experimentalApi": True}}}))
        while json.loads(await ws.recv()).get("id") != 1:
            pass
        await ws.send(json.dumps({"method": "initialized"}))
        await ws.send(json.dumps({"id": 2, "method": method, "params": params}))
        while True:
            msg = json.loads(await ws.recv())
            if msg.get("id") == 2:
                assert "error" not in msg, msg
                return msg["result"]


# -- tests ---------------------------------------------------------------------------------------------------


async def test_both_kinds_listed_idle_with_their_panes_and_transports(lab):
    st = launcher.status()
    ts = await discover()
    for name in ("alpha", "beta"):
        s = st.session(name)
        t = one(ts, f"claude:{name}")
        assert (t.pid, t.pane, t.state, t.address) == (s.pid, s.pane_id, "idle", s.messaging_socket)
        assert t.transports == ("claude-code-socket", "claude-code-message", "tmux")
        assert t.identified_by.startswith(f"claude agents --json + sessions/{s.pid}.json (procStart ")
        # the registry's version is the running binary's (pinned in CI; the candidate under `relay fidelity`)
        assert st.versions["claude-code"] == t.client_version
        assert t.client_status in ("pinned", "verified")
    for name in ("gamma", "delta"):
        s = st.session(name)
        t = one(ts, f"codex:{name}")
        assert (t.address, t.pane, t.state, t.pid) == (s.thread_id, s.pane_id, "idle", s.daemon_pid)
        assert t.transports == ("codex-queue", "tmux")
        assert t.client_version == st.versions["codex"] and t.client_status in ("pinned", "verified")
        assert t.identified_by == (f"session_index.jsonl thread_name={name}; lock held by daemon pid {s.daemon_pid}; "
                                   f"status idle from daemon; pane {s.pane_id}: footer names thread '{name}'")


async def test_busy_while_a_slow_turn_runs(lab):
    # both turns start together (one after the other, a slow Codex start-up on a loaded machine
    # used up Claude's hold before discovery ran), and discovery is asked until it sees both
    # busy: Claude's registry record and the Codex daemon catch up with the screen a little later
    async with anyio.create_task_group() as tg:
        for name in ("alpha", "gamma"):
            tg.start_soon(anyio.to_thread.run_sync, helpers.make_busy, name, 12)
    ts = await until(lambda: _states(("claude:alpha", "busy"), ("codex:gamma", "busy")), timeout=10)
    a, g = one(ts, "claude:alpha"), one(ts, "codex:gamma")
    assert (a.state, a.detail.status_raw) == ("busy", "busy")
    assert g.state == "busy" and g.detail.status_raw["type"] == "active"
    assert one(ts, "claude:beta").state == "idle" and one(ts, "codex:delta").state == "idle"
    for name in ("alpha", "gamma"):
        await anyio.to_thread.run_sync(helpers.wait_idle, name, 60)
    ts = await until(lambda: _states(("claude:alpha", "idle"), ("codex:gamma", "idle")))
    assert one(ts, "claude:alpha").detail.transcript_exists  # the turn wrote the transcript we point at


async def _states(*want: tuple[str, str]) -> list[Target] | None:
    ts = await discover()
    return ts if all(one(ts, spec).state == state for spec, state in want) else None


async def test_non_default_config_dirs_are_honoured(lab, tmp_path):
    lay = launcher.layout()
    ts = await discover()
    assert {t.detail.codex_home for t in ts if t.kind == "codex"} == {str(lay.codex_home)}
    assert {Path(t.detail.record).parent.parent for t in ts if t.kind == "claude-code"} == {lay.claude_config}
    # The same machine seen with default dirs (HOME's ~/.claude, ~/.codex): the lab's
    # live sessions look missing — which is why both homes are resolved from the env.
    plain = {"HOME": str(lay.home), "PATH": lab_env()["PATH"], "RELAY_TMUX_SOCKET": lay.tmux_socket}
    assert [t for t in await discover(plain) if t.live] == []
    assert ClaudeProvider(env=plain).config_dir == lay.home / ".claude"
    assert CodexProvider(env=plain).home == lay.home / ".codex"


async def test_codex_rename_is_seen(lab):
    tid = launcher.status().session("delta").thread_id
    await anyio.to_thread.run_sync(helpers.rename_codex, "delta", "delta-renamed")
    try:
        ts = await discover()  # the first refresh after the rename already sees it
        t = one(ts, "codex:delta-renamed")
        assert t.address == tid and t.identified_by.startswith("session_index.jsonl thread_name=delta-renamed")
        assert not [x for x in ts if x.spec == "codex:delta"]
        # The TUI's footer follows the rename, so its pane stays rostered.
        t = (await until(lambda: _with_pane("codex:delta-renamed")))
        assert t.pane == launcher.status().session("delta-renamed").pane_id
    finally:
        await anyio.to_thread.run_sync(helpers.rename_codex, "delta-renamed", "delta")


async def _with_pane(spec: str) -> Target | None:
    t = one(await discover(), spec)
    return t if t.pane else None


async def test_two_live_claude_sessions_with_one_name_then_kill_9_leaves_a_stale_record(lab, tmp_path):
    st = launcher.status()
    alpha = st.session("alpha")
    assert alpha.session_id and Path(alpha.transcript or "").exists(), "alpha needs a conversation to resume"
    lay = launcher.layout()
    cmd = [str(bin_dir() / "claude"), "--resume", alpha.session_id, "--permission-mode", "acceptEdits",
           "--debug-file", str(lay.logs / "alpha-copy.log")]
    lab_tmux("new-session", "-d", "-s", "alpha-copy", "-x", "160", "-y", "45", "-c", alpha.cwd,
             "-e", f"ANTHROPIC_BASE_URL={st.stub.sessions['alpha'].base_url}", "--", *cmd)
    pane_id, copy_pid = pane_pid_of("alpha-copy")
    rec_file = lay.claude_config / "sessions" / f"{copy_pid}.json"
    try:
        async def both_live() -> list[Target] | None:
            ts = await discover()
            live = [t for t in ts if t.spec == "claude:alpha" and t.live]
            return live if len(live) == 2 and all(t.state == "idle" for t in live) else None

        live = await until(both_live, timeout=60)
        assert sorted(t.pid for t in live) == sorted([alpha.pid, copy_pid])
        copy = next(t for t in live if t.pid == copy_pid)
        assert copy.pane == pane_id and copy.detail.session_id == alpha.session_id  # one conversation, two pids
        session = Session(ledger=Ledger(tmp_path / "l.sqlite"), providers=default_providers(lab_env()))
        with pytest.raises(AmbiguousTarget, match="claude:alpha is ambiguous, 2 live sessions match"):
            await session.target("claude:alpha")

        os.kill(copy_pid, signal.SIGKILL)
        assert not procs.wait_gone([copy_pid], 5.0)
        ts = await discover()
        stale = one(ts, "claude:alpha", live=False)
        assert stale.pid == copy_pid and rec_file.exists()  # kill -9 leaves the record behind
        assert stale.stale_reason == f"pid {copy_pid} is not running"
        assert stale.transports == () and stale.pane is None
        assert stale.detail.status_raw == "idle"
        assert one(ts, "claude:alpha").pid == alpha.pid
        await session.refresh()
        assert (await session.target("claude:alpha")).pid == alpha.pid  # the live one, never the stale one
    finally:
        try:
            os.kill(copy_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        lab_tmux("kill-session", "-t", "=alpha-copy")
        for f in (lay.claude_config / "sessions").glob(f"{copy_pid}.*"):
            f.unlink()
        for f in lay.runtime_dir.glob(f"cc-socks/{copy_pid}.sock"):
            f.unlink()


def _locks() -> set[str]:
    d = launcher.layout().codex_home / "thread-writer-locks"
    return {p.name[:-5] for p in d.glob("*.lock") if not p.name.startswith(".")}


async def test_codex_thread_loaded_without_a_tui_is_live_with_no_pane(lab):
    lay = launcher.layout()
    before = _locks()
    cmd = lay.codex_command(bin_dir(), "gamma", first=False)  # attaches to the daemon, gamma's stub
    lab_tmux("new-session", "-d", "-s", "detach", "-x", "160", "-y", "45", "-c", launcher.status().session("gamma").cwd,
             "--", *cmd)
    try:
        async def new_thread() -> str | None:
            fresh = _locks() - before
            screen = lab_tmux("capture-pane", "-p", "-t", "=detach:").stdout
            return fresh.pop() if len(fresh) == 1 and "› " in screen else None

        tid = await until(new_thread, timeout=60)
        await daemon_call("thread/name/set", {"threadId": tid, "name": "detached-one"})
        pane_id, _ = pane_pid_of("detach")
        t = await until(lambda: _with_pane("codex:detached-one"))
        assert t.pane == pane_id

        lab_tmux("send-keys", "-t", "=detach:", "C-c")  # detach: the daemon keeps the thread loaded

        async def tui_gone() -> bool:
            return lab_tmux("display-message", "-p", "-t", "=detach:", "#{pane_dead}").stdout.strip() == "1"

        try:
            await until(tui_gone, timeout=5)
        except AssertionError:  # a TUI still drawing its welcome takes the first C-c as a key; quit asks twice
            lab_tmux("send-keys", "-t", "=detach:", "C-c")
            await until(tui_gone, timeout=20)
        t = one(await discover(), "codex:detached-one")
        assert t.live and t.state == "idle" and t.pane is None and "tmux" not in t.transports
        assert t.detail.holder_kind == "daemon" and t.pid == launcher.status().session("gamma").daemon_pid
    finally:
        lab_tmux("kill-session", "-t", "=detach")


async def test_goal_controller_thread_is_never_idle(lab):
    from relay_repl.lab.stubs.client import StubClient
    from relay_repl.lab.stubs.script import Rule, Step

    st = launcher.status()
    tid = st.session("gamma").thread_id
    async with StubClient(st.stub.control) as stub:
        script = await stub.get_script("gamma")
        # Slow the goal's auto-continuations down so the loop does not spin the CPU.
        await stub.add_rule("gamma", Rule(match='source="goal"', once=False, steps=[Step(text="still at it", hold=2)]))
        try:
            await daemon_call("thread/goal/set", {"threadId": tid, "objective": "keep the suite green", "status": "active"})
            t = await until(lambda: _state_is("codex:gamma", "never-idle"))
            assert t.detail.goal_status == "active" and t.detail.goal_objective == "keep the suite green"
            assert "goal active (auto-resumes)" in t.identified_by
            # still never idle a few seconds later, between continuations
            await anyio.sleep(3)
            assert one(await discover(), "codex:gamma").state == "never-idle"
        finally:
            await daemon_call("thread/goal/clear", {"threadId": tid})
            # GET /script also returns `pending`, which PUT refuses: restore rules and default only.
            await stub.set_script("gamma", {k: v for k, v in script.items() if k in ("rules", "default") and v is not None})
    await until(lambda: _state_is("codex:gamma", "idle"), timeout=30)


async def _state_is(spec: str, state: str) -> Target | None:
    t = one(await discover(), spec)
    return t if t.state == state else None


async def test_refresh_cost_against_the_lab(lab):
    providers = default_providers(lab_env())
    for p in providers:
        await p.discover()
    t0 = time.perf_counter()
    for p in providers:
        await p.discover()
    elapsed = time.perf_counter() - t0
    print(f"lab refresh (2 claude + codex threads): {elapsed * 1000:.0f} ms")
    assert elapsed < 1.0
