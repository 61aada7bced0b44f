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
import relay_repl.agents.claude_code.lab as claude_lab
import relay_repl.agents.codex.lab as codex_lab
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


# the helpers live beside the checks `relay fidelity` runs (package code): one copy
from relay_repl.lab.fidelity.discovery import (  # noqa: E402
    LabView,
    discover,
    lab_env,
    lab_tmux,
    one,
    pane_pid_of,
    states as _states,
    until,
    with_pane as _with_pane,
)
from relay_repl.lab.fidelity import discovery as checks  # noqa: E402
from relay_repl.agents.codex import fidelity as codex_facts  # noqa: E402


async def daemon_call(method: str, params: dict) -> dict:
    return await codex_facts.daemon_call(LabView(), method, params)


# -- tests ---------------------------------------------------------------------------------------------------


async def test_every_kind_listed_idle_with_its_panes_and_transports(lab):
    await checks.every_kind_listed_idle_with_its_panes_and_transports()


async def test_busy_while_a_slow_turn_runs(lab):
    await checks.busy_while_a_slow_turn_runs()


async def test_non_default_config_dirs_are_honoured(lab, tmp_path):
    lay = launcher.layout()
    ts = await discover()
    assert {t.detail.codex_home for t in ts if t.kind == "codex"} == {str(codex_lab.home(lay.root))}
    assert {Path(t.detail.record).parent.parent for t in ts if t.kind == "claude-code"} == {claude_lab.config_dir(lay.root)}
    # The same machine seen with default dirs (HOME's ~/.claude, ~/.codex): the lab's
    # live sessions look missing — which is why both homes are resolved from the env.
    plain = {"HOME": str(lay.home), "PATH": lab_env()["PATH"], "RELAY_TMUX_SOCKET": lay.tmux_socket}
    assert [t for t in await discover(plain) if t.live] == []
    assert ClaudeProvider(env=plain).config_dir == lay.home / ".claude"
    assert CodexProvider(env=plain).home == lay.home / ".codex"


async def test_codex_rename_is_seen(lab):
    await checks.CHECKS["codex_rename_is_seen"]()


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
    rec_file = claude_lab.config_dir(lay.root) / "sessions" / f"{copy_pid}.json"
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
        for f in (claude_lab.config_dir(lay.root) / "sessions").glob(f"{copy_pid}.*"):
            f.unlink()
        for f in lay.runtime_dir.glob(f"cc-socks/{copy_pid}.sock"):
            f.unlink()


async def test_codex_thread_loaded_without_a_tui_is_live_with_no_pane(lab):
    await checks.CHECKS["codex_thread_loaded_without_a_tui_is_live_with_no_pane"]()


async def test_goal_controller_thread_is_never_idle(lab):
    from relay_repl.lab.stubs.client import StubClient
    from relay_repl.lab.stubs.script import Rule, Step

    st = launcher.status()
    tid = st.session("gamma").session_id
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
