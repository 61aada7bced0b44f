"""`relay send codex:NAME MESSAGE`'s plain pre-plan (frontends/send_plain.py with Codex's hook,
agents/codex/plain_plan.py) against the plan the models ask about for the same send, as `relay send`
builds it (tests/frontends/send_plain_helpers.py): the same fields, digest and printed bytes, over one
real CODEX_HOME (conftest.codex_world) for each case a Codex plan distinguishes; and the sends the
hook hands to the models. Live in the lab: test_plain_plan_live.py."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
import pytest

from relay_repl.system.pane_list import PlainRoster
from tests.agents.codex.conftest import CLI_VERSION, T1, plain_module
from tests.frontends.send_plain_helpers import plain_plan, same_plan

pytestmark = pytest.mark.anyio

BODY = "hi from the plain plan"
TMUX_TOO = ("none (a plain send uses one transport; tmux would also work: "
            "transport=session.transports.codex_queue | session.transports.tmux tries it next)")


async def plan_of(name: str) -> dict[str, Any]:
    """Phase 1's plan fields for `relay send codex:<name>`, asserted equal to the models' (fields, digest,
    bytes). In a worker thread: both clients block, and the fake daemon answers on this test's loop."""
    return await anyio.to_thread.run_sync(same_plan, f"codex:{name}", BODY)


async def test_an_idle_thread_in_a_pane_plans_plainly_as_the_models_plan_it(codex_world):
    """Idle, held by the daemon ("status idle from daemon"), in the pane its footer names: codex-queue,
    tmux named as the fallback, no note. Old code: Codex has no plain_plan, so phase 1 hands every
    Codex send to the models (`same_plan` fails on `fields is None`)."""
    fields = await plan_of("idle-one")
    assert fields["transport"] == "codex-queue" and fields["fallback"] == TMUX_TOO
    assert "status idle from daemon" in fields["identified_by"] and "footer names thread 'idle-one'" in fields[
        "identified_by"]
    assert fields["notes"] == [] and fields["files"] == []
    assert fields["payload"].endswith(f"] {BODY}") and fields["relay_id"] in fields["payload"]


async def test_waiting_busy_goal_plan_mode_and_a_no_daemon_holder_plan_plainly_as_the_models_plan_them(codex_world):
    """Each case's own notes, equal both ways: a thread waiting on an approval (no note), a busy thread
    (the item waits for its next idle transition), a goal-active thread (never idle: the ranking's note and the queue's goal-controller
    note, no fallback), Plan mode, a thread a --no-daemon TUI holds (state unknown, "no daemon: lock
    only", the recorded cli_version). Old code: handed to the models, as above."""
    asks = await plan_of("asks")
    assert ", waiting, " in asks["target"] and asks["notes"] == [] and "status active from daemon" in asks[
        "identified_by"]

    busy = await plan_of("busy-one")
    assert busy["notes"] == ["target is busy: the item waits for its next idle transition (one item per turn)"]
    assert "status active from daemon" in busy["identified_by"] and busy["fallback"] == "none"

    goal = await plan_of("goal-one")
    assert goal["notes"][0] == ("codex:goal-one never goes idle (goal controller): only a durable transport can "
                                "deliver without waiting")
    assert goal["notes"][1].startswith("goal-controller thread:") and len(goal["notes"]) == 2
    assert "goal active (auto-resumes)" in goal["identified_by"] and ", never-idle, " in goal["target"]

    plans = await plan_of("plans")
    assert [n[:30] for n in plans["notes"]] == ["target is in Plan mode: Codex "]

    tui = await plan_of("tui-one")
    assert "no daemon: lock only" in tui["identified_by"] and ", unknown, " in tui["target"]
    assert f"codex {CLI_VERSION} pinned" in tui["target"] and tui["notes"] == []


async def test_what_the_hook_does_not_plan_goes_to_the_models(codex_world):
    """A thread with no rollout yet offers only tmux (the queue refuses it): the hook answers None and the
    send is planned by the models (an id taken, nothing printed); a thread not loaded is not a live row,
    so phase 1 never asks the hook. Old code: the first assertion fails (no hook module to load)."""
    hook = plain_module("plain_plan")
    rows = await anyio.to_thread.run_sync(lambda: {r.name: r for r in plain_module("plain_listing").listing(
        codex_world, PlainRoster(codex_world))})
    assert rows["fresh"].transports == ("tmux",) and rows["fresh"].live
    assert hook.plan_parts(rows["fresh"], dict(codex_world), _send(rows["fresh"])) is None
    assert hook.plan_parts(rows["idle-one"], dict(codex_world), _send(rows["idle-one"]))["transport"] == "codex-queue"

    for name in ("fresh", "free-one"):
        pre, printed = await anyio.to_thread.run_sync(plain_plan, f"codex:{name}", BODY)
        assert pre.fields is None and printed == "", (name, printed)


def _send(row: Any) -> Any:
    """What phase 1 tells the hook (frontends/send_plain.PlainSend), for `row`'s kind."""
    from relay_repl.frontends.send_plain import PlainSend
    from relay_repl.system.prefetch import load_by_file

    facts = load_by_file("plain-facts", "relay_repl.agents.plain_facts", "relay_repl.plain_listing")
    chooser = load_by_file("plain-choice", "relay_repl.agents.plain_choice", "relay_repl.plain_listing")
    assert facts is not None and chooser is not None
    return PlainSend(line=f"[relay/1 ...] {BODY}", relay_id="x-1", sender="operator", pid=os.getpid(), inbox_open=True,
                     interrupt=False, choose=chooser.chooser("codex", facts.adapter("codex")))


def test_the_codex_hook_loads_without_pydantic_or_an_event_loop():
    """Loaded by file as phase 1 loads it, the hook and its words (and Codex's plain listing) pull in none of
    pydantic, asyncio, anyio, libtmux or the agents package, and phase 1 and the listing share one copy of
    plain_facts. Old code: the hook does not exist (and the listing loaded a second plain_facts)."""
    code = (
        "import sys\n"
        "from relay_repl.system.prefetch import load_by_file\n"
        "m = load_by_file('codex', 'relay_repl.agents.codex.plain_plan', 'relay_repl.plain_plan')\n"
        "assert m is not None and m._words().queue_delivered_when('x')\n"
        "from relay_repl.frontends.send_plain import _facts\n"
        "assert _facts() is not None\n"
        "from relay_repl.system.pane_list import PlainRoster\n"
        "lst = load_by_file('codex', 'relay_repl.agents.codex.plain_listing', 'relay_repl.plain_listing')\n"
        "env = {'CODEX_HOME': '/nonexistent/codex-home', 'PATH': '/usr/bin:/bin'}\n"
        "assert lst.listing(env, PlainRoster(env)) == []\n"
        "assert len([n for n in sys.modules if n.endswith('plain_facts')]) == 1, sorted(sys.modules)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('pydantic', 'pydantic_core', 'asyncio', 'anyio',"
        " 'libtmux', 'dataclasses') or n == 'relay_repl.agents')\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _asked(shown: str, spec: str, relay_id: str, answer: str) -> tuple[Any, list[str]]:
    """`relay send spec BODY`'s phase 2 (the models' pipeline, the id pinned) asked through the gate of a plan
    already on screen (`shown`: its digest), answered `answer` at the prompt: (the delivery, what the gate wrote)."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from relay_repl.frontends.commands.common import inbox_open
    from relay_repl.session.app import make_session
    from relay_repl.session.core.preshown_gate import PreShownGate

    written: list[str] = []

    async def go() -> Any:
        with create_pipe_input() as pipe:
            pipe.send_text(answer)
            gate = PreShownGate(shown, input=pipe, output=DummyOutput(), write=written.append)
            session = make_session(approve=gate, echo=None)
            async with inbox_open(session, lambda line: None):
                return await session.send(spec, BODY, relay_id=relay_id)

    return anyio.run(go), written


async def test_a_thread_that_turned_busy_after_its_plain_plan_is_asked_about_with_the_new_plan(codex_world):
    """Phase 1 shows idle-one idle; before phase 2 the daemon says it is busy: the models' plan (the busy
    note) is printed under the changed-plan line and is the one asked about; the same plan is not printed
    again. Old code: no Codex hook, so no plain plan to compare (`pre.digest` is None)."""
    from relay_repl.core.approval import plan_digest
    from relay_repl.session.core.preshown_gate import CHANGED

    pre, printed = await anyio.to_thread.run_sync(plain_plan, "codex:idle-one", BODY)
    assert pre.digest is not None and "target is busy" not in printed
    d, written = await anyio.to_thread.run_sync(_asked, pre.digest, "codex:idle-one", pre.relay_id, "n\r")
    assert CHANGED not in written and not any(w.startswith("Plan: ") for w in written)  # the same plan: asked only
    assert plan_digest(d.plan) == pre.digest and d.state.value == "withheld"

    codex_world.daemon.statuses[T1] = {"type": "active", "activeFlags": []}
    d, written = await anyio.to_thread.run_sync(_asked, pre.digest, "codex:idle-one", pre.relay_id, "n\r")
    i = written.index(CHANGED)
    assert written[i + 1] == d.plan.render() and "target is busy: the item waits" in written[i + 1]
    assert plan_digest(d.plan) != pre.digest and d.state.value == "withheld"  # only the plan on screen was asked


PHASE_ONE = """
import os, sys
from relay_repl.frontends.send_plain import preplan
pre = preplan('codex', sys.argv[1], 'hi', dict(os.environ))
heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'pydantic_core', 'asyncio', 'anyio', 'libtmux',
                                                          'annotated_types', 'prompt_toolkit', 'websockets'})
print('PIN', pre.digest is not None, heavy, 'dataclasses' in sys.modules, 'relay_repl.agents' in sys.modules)
"""


async def test_phase_one_of_a_codex_send_loads_no_pydantic_event_loop_or_libtmux(codex_world):
    """The whole of phase 1 for a Codex thread (its plain listing asking the daemon over its socket, the
    panes' captures, the process table, the hook), in a process of its own: the plan printed, and none of
    pydantic, asyncio, anyio, libtmux, websockets, dataclasses or the agents package loaded. Old code: no
    Codex hook, so no plan printed (`PIN False`)."""
    for name in ("idle-one", "goal-one", "tui-one"):
        r = await anyio.to_thread.run_sync(lambda n=name: subprocess.run(  # the fake daemon answers on this loop
            [sys.executable, "-c", PHASE_ONE, n], capture_output=True, text=True, timeout=60, env=dict(os.environ)))
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[-1] == "PIN True [] False False", (name, r.stdout)
        assert r.stdout.startswith(f"Plan: send to codex:{name}"), r.stdout
