"""Fidelity checks: discovery against the real clients, in a 2+2 lab (Claude alpha and beta,
Codex gamma and delta).

Package code, not a test file, so `relay fidelity` runs them from an installed wheel; the live
tests (tests/agents/test_discovery_live.py) call these same functions, and use the helpers
here for their other checks. What a check stages itself (typing into lab panes, calling the
Codex daemon API) is setup, not the code under test: discovery itself only reads. A check
raises AssertionError when its fact does not hold (the runner refuses `python -O`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import anyio

import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
import relay_repl.store.paths as paths
from relay_repl.agents import default_providers
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.codex import lab as codex_lab
from relay_repl.core.target import Target
from relay_repl.system.polling import poll_until
from relay_repl.lab.install import bin_dir
from relay_repl.lab.layout import Layout

LAB_SIZE = (2, 2)


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


async def until(fn: Any, timeout: float = 20.0, every: float = 0.2) -> Any:
    """Re-run `fn` (async) until it returns a truthy value; return that value."""
    last: Any = None

    async def check() -> Any:
        nonlocal last
        last = await fn()
        return last or None

    got = await poll_until(check, timeout=timeout, interval=every)
    if got is None:
        raise AssertionError(f"condition not met within {timeout:g}s (last: {last!r})")
    return got


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
    """One JSON-RPC call on the lab's Codex daemon control socket (staging only)."""
    from websockets.asyncio.client import unix_connect

    sock = os.path.realpath(codex_lab.control_socket(Layout.at(paths.lab_dir()).root))
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


async def states(*want: tuple[str, str]) -> list[Target] | None:
    ts = await discover()
    return ts if all(one(ts, spec).state == state for spec, state in want) else None


async def with_pane(spec: str) -> Target | None:
    t = one(await discover(), spec)
    return t if t.pane else None


def codex_locks() -> set[str]:
    return codex_lab.locks(launcher.layout().root)


# -- the checks ---------------------------------------------------------------------------------------


async def both_kinds_listed_idle_with_their_panes_and_transports() -> None:
    st = launcher.status()
    assert st is not None, "no lab"
    ts = await discover()
    for name in ("alpha", "beta"):
        s = st.session(name)
        t = one(ts, f"claude:{name}")
        assert (t.pid, t.pane, t.state, t.address) == (s.pid, s.pane_id, "idle", s.messaging_socket), t
        assert t.transports == ("claude-code-socket", "claude-code-message", "tmux"), t.transports
        assert t.identified_by.startswith(f"claude agents --json + sessions/{s.pid}.json (procStart "), t.identified_by
        # the registry's version is the running binary's (pinned in CI; the candidate under `relay fidelity`)
        assert st.versions["claude-code"] == t.client_version, (t.detail, st.versions)
        assert t.client_status in ("pinned", "verified"), t.client_status
    for name in ("gamma", "delta"):
        s = st.session(name)
        t = one(ts, f"codex:{name}")
        assert (t.address, t.pane, t.state, t.pid) == (s.thread_id, s.pane_id, "idle", s.daemon_pid), t
        assert t.transports == ("codex-queue", "tmux"), t.transports
        assert t.client_version == st.versions["codex"] and t.client_status in ("pinned", "verified"), t
        assert t.identified_by == (f"session_index.jsonl thread_name={name}; lock held by daemon pid {s.daemon_pid}; "
                                   f"status idle from daemon; pane {s.pane_id}: footer names thread '{name}'"), \
            t.identified_by


async def busy_while_a_slow_turn_runs() -> None:
    # both turns start together (one after the other, a slow Codex start-up on a loaded machine
    # used up Claude's hold before discovery ran), and discovery is asked until it sees both
    # busy: Claude's registry record and the Codex daemon catch up with the screen a little later
    async with anyio.create_task_group() as tg:
        for name in ("alpha", "gamma"):
            tg.start_soon(_make_busy, name, 12.0)
    ts = await until(lambda: states(("claude:alpha", "busy"), ("codex:gamma", "busy")), timeout=10)
    a, g = one(ts, "claude:alpha"), one(ts, "codex:gamma")
    assert (a.state, ClaudeDetail.of(a).status_raw) == ("busy", "busy"), a.detail
    assert g.state == "busy" and (CodexDetail.of(g).status_raw or {}).get("type") == "active", g.detail
    assert one(ts, "claude:beta").state == "idle" and one(ts, "codex:delta").state == "idle"
    for name in ("alpha", "gamma"):
        await anyio.to_thread.run_sync(helpers.wait_idle, name, 60)
    ts = await until(lambda: states(("claude:alpha", "idle"), ("codex:gamma", "idle")))
    assert ClaudeDetail.of(one(ts, "claude:alpha")).transcript_exists  # the turn wrote the transcript we point at


async def _make_busy(name: str, seconds: float) -> None:
    await anyio.to_thread.run_sync(helpers.make_busy, name, seconds)


async def codex_rename_is_seen() -> None:
    tid = launcher.status().session("delta").thread_id  # type: ignore[union-attr]
    await anyio.to_thread.run_sync(helpers.rename_codex, "delta", "delta-renamed")
    try:
        ts = await discover()  # the first refresh after the rename already sees it
        t = one(ts, "codex:delta-renamed")
        assert t.address == tid and t.identified_by.startswith("session_index.jsonl thread_name=delta-renamed"), t
        assert not [x for x in ts if x.spec == "codex:delta"]
        # The TUI's footer follows the rename, so its pane stays rostered.
        t = (await until(lambda: with_pane("codex:delta-renamed")))
        assert t.pane == launcher.status().session("delta-renamed").pane_id  # type: ignore[union-attr]
    finally:
        await anyio.to_thread.run_sync(helpers.rename_codex, "delta-renamed", "delta")


async def codex_thread_loaded_without_a_tui_is_live_with_no_pane() -> None:
    lay = launcher.layout()
    st = launcher.status()
    assert st is not None, "no lab"
    before = codex_locks()
    cmd = codex_lab.command(bin_dir(), lay.root, "gamma", first=False)  # attaches to the daemon, gamma's stub
    lab_tmux("new-session", "-d", "-s", "detach", "-x", "160", "-y", "45", "-c", st.session("gamma").cwd, "--", *cmd)
    try:
        async def new_thread() -> str | None:
            fresh = codex_locks() - before
            screen = lab_tmux("capture-pane", "-p", "-t", "=detach:").stdout
            return fresh.pop() if len(fresh) == 1 and "› " in screen else None

        tid = await until(new_thread, timeout=60)
        await daemon_call("thread/name/set", {"threadId": tid, "name": "detached-one"})
        pane_id, _ = pane_pid_of("detach")
        t = await until(lambda: with_pane("codex:detached-one"))
        assert t.pane == pane_id, (t.pane, pane_id)

        lab_tmux("send-keys", "-t", "=detach:", "C-c")  # detach: the daemon keeps the thread loaded

        async def tui_gone() -> bool:
            return lab_tmux("display-message", "-p", "-t", "=detach:", "#{pane_dead}").stdout.strip() == "1"

        try:
            await until(tui_gone, timeout=5)
        except AssertionError:  # a TUI still drawing its welcome takes the first C-c as a key; quit asks twice
            lab_tmux("send-keys", "-t", "=detach:", "C-c")
            await until(tui_gone, timeout=20)
        t = one(await discover(), "codex:detached-one")
        assert t.live and t.state == "idle" and t.pane is None and "tmux" not in t.transports, t
        assert CodexDetail.of(t).holder_kind == "daemon" and t.pid == st.session("gamma").daemon_pid, t.detail
    finally:
        lab_tmux("kill-session", "-t", "=detach")


CHECKS = {
    "both_kinds_listed_idle_with_their_panes_and_transports": both_kinds_listed_idle_with_their_panes_and_transports,
    "busy_while_a_slow_turn_runs": busy_while_a_slow_turn_runs,
    "codex_rename_is_seen": codex_rename_is_seen,
    "codex_thread_loaded_without_a_tui_is_live_with_no_pane": codex_thread_loaded_without_a_tui_is_live_with_no_pane,
}
