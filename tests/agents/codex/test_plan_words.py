"""Codex's plan words over a plain listing's rows (agents/codex/plan_words.py) against what the
models' codex-queue and tmux transports say over the Targets discovery gives, on one real CODEX_HOME:
real flocks held by real processes, real SQLite files, a real tmux pane whose footer names its
thread, and a WebSocket-over-Unix-socket daemon (tests/agents/test_codex_registry.py's fixtures).

Threads (conftest.codex_world): idle, busy, waiting and goal-active (daemon-held), one in Plan mode, one with
no rollout yet (the queue refuses it), one held by a `--no-daemon` TUI (no daemon: lock only) and one
whose lock is free (not loaded). The whole plan, phase 1's against the models': test_plain_plan.py."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pytest

from relay_repl.agents import PaneRoster, kind_for
from relay_repl.agents.discovery import discover_all
from relay_repl.system import loopless
from relay_repl.system.pane_list import PlainRoster
from tests.agents.codex.conftest import NAMES, plain_module

pytestmark = pytest.mark.anyio


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
    assert seen["asks"] == ("waiting", None, ())
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
        "m = load_by_file('codex-plan_words', 'relay_repl.agents.codex.plan_words', 'relay_repl.plain_listing')\n"
        "assert m is not None and m.queue_delivered_when('x')\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('pydantic', 'pydantic_core', 'asyncio', 'anyio',"
        " 'libtmux', 'dataclasses') or n == 'relay_repl.agents')\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
