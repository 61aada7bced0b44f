"""Codex's plan words over a plain listing's rows (agents/codex/plan_words.py) against what the
models' codex-queue and tmux transports say over the Targets discovery gives, on one real CODEX_HOME:
real flocks held by real processes, real SQLite files, a real tmux pane whose footer names its
thread, and a WebSocket-over-Unix-socket daemon (tests/agents/test_codex_registry.py's fixtures).

Threads: idle, busy and goal-active (daemon-held), one in Plan mode, one with no rollout yet (the
queue refuses it), one held by a `--no-daemon` TUI (no daemon: lock only) and one whose lock is free
(not loaded). Live in the lab: test_plan_words_live.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from relay_repl.agents import PaneRoster, kind_for
from relay_repl.agents.discovery import discover_all
from relay_repl.system import loopless
from relay_repl.system.pane_list import PlainRoster
from relay_repl.system.prefetch import load_by_file
from tests.agents.test_codex_registry import (T1, T2, T3, T4, daemon, fake_codex_bin, goals_db, holders,  # noqa: F401
                                              home, index, lock, mark_daemon, rollout, state_db)

pytestmark = pytest.mark.anyio

T5 = "01a22c47-bbbb-7921-9dbe-4cd6565cd35e"  # held by a --no-daemon TUI
T6 = "01a22c47-cccc-7921-9dbe-4cd6565cd35e"  # in Plan mode
T7 = "01a22c47-dddd-7921-9dbe-4cd6565cd35e"  # no rollout yet
NAMES = {T1: "idle-one", T2: "busy-one", T3: "goal-one", T4: "free-one", T5: "tui-one", T6: "plans", T7: "fresh"}


def plain_module(name: str) -> Any:
    """A Codex module as the plain path loads it: by file, without the agents package."""
    mod = load_by_file(f"codex-{name}", f"relay_repl.agents.codex.{name}", "relay_repl.plain_plan")
    assert mod is not None
    return mod


def plan_mode_rollout(path: Path) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"type": "event_msg", "payload": {"type": "thread_settings_applied", "thread_settings": {
            "collaboration_mode": {"mode": "plan"}}}}) + "\n")


@pytest.fixture
async def codex_world(home, holders, daemon, tmp_path, monkeypatch):  # noqa: F811
    """The environment of a CODEX_HOME holding every case above, and a tmux server whose one pane runs a
    Codex footer naming `idle-one`."""
    sock = f"relay-cxplan-{uuid.uuid4().hex[:8]}"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "CODEX_HOME": str(home), "RELAY_TMUX_SOCKET": sock,
           "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR", "/tmp"), "RELAY_HOME": str(tmp_path / "relay")}
    for k in ("TMUX", "RELAY_ADAPTERS_DIR", "RELAY_LAB_DIR"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    ids = (T1, T2, T3, T4, T5, T6, T7)
    for t in ids:
        lock(home, t)
    rollouts = {t: rollout(home, t) for t in ids if t != T7}
    plan_mode_rollout(rollouts[T6])
    state_db(home, [{"id": t, "rollout_path": str(rollouts.get(t, home / "sessions" / f"gone-{t}.jsonl")),
                     "updated_at": 1, "source": "cli", "cwd": "/work", "title": f"title {t[:4]}", "archived": 0,
                     "thread_source": "user", "name": None} for t in ids])
    index(home, *NAMES.items())
    goals_db(home, [(T3, "active", "keep going"), (T1, "complete", "done")])
    dpid = holders(*(home / "thread-writer-locks" / f"{t}.lock" for t in (T1, T2, T3, T6, T7)))
    mark_daemon(home, dpid)
    holders(home / "thread-writer-locks" / f"{T5}.lock")  # another process: a TUI run with --no-daemon
    await daemon({T1: {"type": "idle"}, T2: {"type": "active", "activeFlags": []}, T3: {"type": "idle"},
                  T6: {"type": "idle"}, T7: {"type": "idle"}})
    codex = fake_codex_bin(tmp_path)
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "cx", f"{codex} idle-one"],
                   check=True)
    try:
        for _ in range(100):
            shot = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "cx"], capture_output=True,
                                  text=True).stdout
            if "/work · idle-one" in shot:
                break
            await anyio.sleep(0.05)
        yield env
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def plain_rows(env: dict[str, str]) -> dict[str, Any]:
    rows = plain_module("plain_listing").listing(env, PlainRoster(env))
    assert rows is not None, "the plain listing refused a CODEX_HOME it accepts"
    return {r.name: r for r in rows}


def model_targets(env: dict[str, str]) -> dict[str, Any]:
    k = kind_for("codex")
    assert k is not None
    found = loopless.run(discover_all, list(k.discovery.providers(env, PaneRoster(env=env, ttl=0))))
    return {t.name: t for t in found}


async def test_the_queue_words_over_a_row_are_the_models_words(codex_world):
    """For every thread: codex-queue's refusal (the kind's own), its notes and its evidence words, and what
    typing into its pane warns of, read from the plain row equal what the models' transports say of the
    Target. Old code: plan_words.py does not exist."""
    from relay_repl.transports.durable_queue import DurableQueueTransport

    words = plain_module("plan_words")
    rows = await anyio.to_thread.run_sync(plain_rows, codex_world)  # blocking clients: the fake daemon is on this loop
    targets = await anyio.to_thread.run_sync(model_targets, codex_world)
    assert set(rows) == set(targets) == set(NAMES.values())

    queue = DurableQueueTransport("codex-queue")
    way = queue.way_of(targets["idle-one"])
    screen = kind_for("codex").screen  # type: ignore[union-attr]
    seen: dict[str, tuple[Any, ...]] = {}
    for name, row in rows.items():
        t = targets[name]
        assert (row.state, row.live, row.address) == (t.state, t.live, t.address)
        assert words.row_queue_refusal(row) == way.refusal(t)
        assert words.row_queue_notes(row) == queue.plan_notes(t)
        assert words.queue_delivered_when(row.address) == queue.delivered_when(t, None)  # type: ignore[arg-type]
        assert words.tmux_busy_note(row.state, bool(row.detail.get("plan_mode"))) == screen.tmux_busy_note(t)
        seen[name] = (row.state, words.row_queue_refusal(row), words.row_queue_notes(row))

    # each case is what it is meant to be, so the equalities above covered it
    assert seen["idle-one"] == ("idle", None, ())
    assert rows["idle-one"].pane and "footer names thread 'idle-one'" in rows["idle-one"].identified_by
    assert "status idle from daemon" in rows["idle-one"].identified_by
    assert seen["busy-one"][0] == "busy" and seen["busy-one"][2] == (
        "target is busy: the item waits for its next idle transition (one item per turn)",)
    assert seen["goal-one"][0] == "never-idle" and seen["goal-one"][2][0].startswith("goal-controller thread:")
    assert seen["free-one"][0] == "unknown" and not rows["free-one"].live and seen["free-one"][2] == (
        "thread is not loaded: the item waits until it is resumed (`codex resume`)",)
    assert "no daemon: lock only" in rows["tui-one"].identified_by and seen["tui-one"][2] == ()
    assert seen["plans"][2][0].startswith("target is in Plan mode")
    assert seen["fresh"][1] == "no rollout yet: `codex queue` fails until the thread's first turn"
    assert words.queue_refusal("codex:x", "not-a-uuid", None) == "codex:x has no thread uuid" == way.refusal(
        targets["idle-one"].model_copy(update={"address": "not-a-uuid", "name": "x"}))
    assert words.TMUX_DELIVERED_WHEN == kind_for("codex").evidence.tmux_delivered_when()  # type: ignore[union-attr]


def test_the_plan_words_load_without_pydantic_or_an_event_loop():
    """Loaded by file as the plain pre-plan loads it, the module pulls in none of pydantic, asyncio,
    anyio, libtmux or dataclasses. Old code: the module does not exist."""
    code = (
        "import sys\n"
        "from relay_repl.system.prefetch import load_by_file\n"
        "m = load_by_file('codex-plan_words', 'relay_repl.agents.codex.plan_words', 'relay_repl.plain_plan')\n"
        "assert m is not None and m.queue_delivered_when('x')\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('pydantic', 'pydantic_core', 'asyncio', 'anyio',"
        " 'libtmux', 'dataclasses') or n == 'relay_repl.agents')\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
