"""`relay run ping -p target=codex:NAME`'s first plan printed before the models (frontends/run_plain.py
with Codex's hooks: agents/codex/plain_plan.plan_parts and reply_route) against the first plan the models
ask about for the same run id and relay id (tests/frontends/run_plain_helpers.py): the same fields, digest
and printed bytes, reply route included, over one real CODEX_HOME (conftest.codex_world)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from relay_repl.store.ledger import Ledger
from relay_repl.store.paths import ledger_path
from tests.frontends.run_plain_helpers import phase_one_modules, plain_run, same_run_plan
from tests.frontends.send_plain_helpers import normalised

REPO = Path(__file__).parents[3]

pytestmark = pytest.mark.anyio


async def first_plan(name: str, recipe: str = "ping") -> dict[str, Any]:
    """In a worker thread: both clients block, and the fake daemon answers on this test's loop."""
    return await anyio.to_thread.run_sync(same_run_plan, recipe, "target", f"codex:{name}")


async def test_ping_to_an_idle_thread_plans_plainly_as_the_models_plan_it(codex_world):
    """Idle thread, no config.toml (Codex's defaults: workspace-write, so the sandbox refuses `relay reply`
    and no MCP server is configured): the turn reply from its rollout. The heading names the run phase 1
    drew. Old code: no plain path for `relay run` (preplan does not exist)."""
    fields = await first_plan("idle-one")
    assert fields["heading"].startswith("recipe ping, run run-") and fields["heading"].endswith(
        "round 1/1, step 1: tell codex:idle-one")
    assert fields["reply_route"].startswith("turn reply: the agent's own final message")
    assert "hop=0 want=ack] ping from the relay operator (run run-" in fields["payload"]


async def test_the_route_follows_the_threads_config_toml(codex_world):
    """An unsandboxed thread with the relay MCP server configured: relay_reply first, `relay reply` as the
    alternative (Codex's mcp_first), both with this process's inbox; a sandboxed one with the server and
    approval_policy never: the turn reply (the call would be refused)."""
    home = codex_world["CODEX_HOME"]
    with open(f"{home}/config.toml", "w") as f:
        f.write('sandbox_mode = "danger-full-access"\n[mcp_servers.relay]\ncommand = "relay"\nargs = ["mcp"]\n')
    both = await first_plan("busy-one")
    assert both["reply_route"].startswith("the agent calls relay_reply") and "; or codex:busy-one answers by running" in (
        both["reply_route"])
    with open(f"{home}/config.toml", "w") as f:
        f.write('approval_policy = "never"\n[mcp_servers.relay]\ncommand = "relay"\nargs = ["mcp"]\n')
    turn = await first_plan("goal-one")
    assert turn["reply_route"].startswith("turn reply:")


async def test_an_ask_recipe_of_several_rounds_plans_plainly_as_the_models_plan_it(codex_world):
    """Another bare recipe on the operator's shelf: an ask (want=reply), three rounds, two steps, a body naming
    {round}, {rounds}, {run} and the target: round 1's first step, the same both ways."""
    shelf = Path(os.environ["RELAY_HOME"]) / "recipes"
    shelf.mkdir(parents=True)
    (shelf / "quiz.toml").write_text(
        'name = "quiz"\nrounds = 3\n\n[params.who]\ntype = "target"\n\n'
        '[[steps]]\nkind = "ask"\nto = "{who}"\nbody = "round {round}/{rounds} of {run}: {who}, one word please"\n\n'
        '[[steps]]\nkind = "tell"\nto = "{ who }"\nbody = "thanks"\n')
    fields = await anyio.to_thread.run_sync(same_run_plan, "quiz", "who", "codex:busy-one")
    assert fields["heading"].endswith("round 1/3, step 1: ask codex:busy-one")
    assert "want=reply] round 1/3 of run-" in fields["payload"] and fields["payload"].endswith(
        ": codex:busy-one, one word please")


async def test_what_codex_does_not_plan_plainly_goes_to_the_models(codex_world):
    """A thread whose send would go by tmux (no rollout yet): no plan printed; the ids taken are handed over."""
    pre, printed = await anyio.to_thread.run_sync(plain_run, "ping", "target", "codex:fresh")
    assert printed == "" and pre.digest is None and pre.relay_id is not None and pre.run_id is not None


# -- the command, with the plain branch on (entry.main) and off (cli.main) --------------------------------------

ON = """
import os, sys
from relay_repl.frontends import run_plain
from relay_repl.frontends.entry import main

real = run_plain.preplan

def traced(*a, **k):  # which way phase 1 went, for the test (a file: stdout and stderr are compared)
    pre = real(*a, **k)
    with open(os.environ["PLAIN_TRACE"], "w") as f:
        f.write("shown" if pre.digest else "handed over" if pre.relay_id else "models")
    return pre

run_plain.preplan = traced
sys.argv[0] = "relay"
sys.exit(main())
"""
OFF = "import sys; from relay_repl.frontends.cli import main; sys.argv[0] = 'relay'; sys.exit(main())"


def relay(code: str, *words: str, env: dict[str, str], cwd: Path = REPO) -> tuple[int, str, str]:
    r = subprocess.run([sys.executable, "-c", code, *words], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       cwd=cwd, timeout=120, env=env)
    return r.returncode, masked(r.stdout), masked(r.stderr)


def masked(text: str) -> str:
    """A process's output with what differs by process masked: its pid, the run id it drew."""
    return re.sub(r"\brun-[0-9a-f]{8}\b", "run-ID", normalised(text))


def on_off(env: dict[str, str], *words: str, cwd: Path = REPO) -> tuple[tuple[int, str, str], str]:
    """`relay *words`'s (exit code, stdout, stderr), the same with the plain branch on and off, and which way
    phase 1 went ("shown", "handed over" with ids taken, "models" with none, "" when not the bare shape)."""
    trace = Path(tempfile.mkdtemp(prefix="rrpt")) / "trace"
    on = relay(ON, *words, env={**env, "PLAIN_TRACE": str(trace)}, cwd=cwd)
    off = relay(OFF, *words, env=env, cwd=cwd)
    assert on == off, (words, on, off)
    way = trace.read_text() if trace.exists() else ""
    shutil.rmtree(trace.parent)
    return on, way


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


async def test_a_plain_run_prints_what_the_models_print_and_answers_no_without_a_terminal(codex_world):
    """The whole command both ways (entry.main with phase 1, cli.main without): the same bytes (run id and pid
    masked), the first plan printed once, No without a terminal, the run stopped resumable under the run id
    phase 1 drew. Old code: entry.main has no `run` branch (the trace file is never written)."""
    (code, out, err), way = await anyio.to_thread.run_sync(on_off, _env(), "run", "ping", "-p", "target=codex:idle-one")
    assert way == "shown"
    assert code == 1 and out.startswith("recipe ping, run run-ID, round 1/1, step 1: tell codex:idle-one\nPlan: ")
    assert out.count("Plan:") == 1 and "No terminal to ask on: answering No" in out
    assert "the plan changed" not in out and "relay run --resume run-ID" in out
    runs = {e.relay_id for e in Ledger(ledger_path()).events(kind="run-start")}
    assert len(runs) == 2  # one run each way, each under its own id


async def test_a_run_phase_one_hands_over_is_the_models_with_its_ids(codex_world):
    """A thread whose send would go by tmux: phase 1 prints nothing and hands its run id and relay id over
    (no gate): the command is the models' either way, and the run is recorded under the id phase 1 drew."""
    (code, out, err), way = await anyio.to_thread.run_sync(on_off, _env(), "run", "ping", "-p", "target=codex:fresh")
    assert way == "handed over" and code == 1 and out.count("Plan:") == 1 and "transport   tmux" in out


async def test_a_first_plan_that_changed_while_shown_is_printed_and_only_it_is_asked(codex_world):
    """Between the phases the thread's config.toml changed (another reply route): the models' first plan differs
    from the one shown, so the pre-shown gate prints the changed-plan line and the new plan, and asks about it."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from relay_repl.core.approval import plan_digest
    from relay_repl.frontends.commands.common import inbox_open
    from relay_repl.session.app import make_session
    from relay_repl.session.core.preshown_gate import CHANGED, PreShownGate
    from relay_repl.session.runs.recipes import run_recipe

    pre, printed = await anyio.to_thread.run_sync(plain_run, "ping", "target", "codex:idle-one")
    assert pre.digest is not None and "reply via   turn reply" in printed
    with open(f"{codex_world['CODEX_HOME']}/config.toml", "w") as f:
        f.write('sandbox_mode = "danger-full-access"\n')
    written: list[str] = []

    def models() -> Any:
        async def go() -> Any:
            with create_pipe_input() as pipe:
                pipe.send_text("n\r")
                gate = PreShownGate(pre.digest, input=pipe, output=DummyOutput(), write=written.append)
                session = make_session(approve=gate, echo=None)
                async with inbox_open(session, lambda line: None):
                    return await run_recipe(session, "ping", {"target": "codex:idle-one"}, echo=lambda s: None,
                                            run_id=pre.run_id, first_relay_id=pre.relay_id), session

        return anyio.run(go)

    run, session = await anyio.to_thread.run_sync(models)
    (d,) = session.deliveries
    i = written.index(CHANGED)
    assert written[i + 1] == d.plan.render() and "codex:idle-one answers by running `relay reply" in written[i + 1]
    assert plan_digest(d.plan) != pre.digest and d.relay_id == pre.relay_id and run.id == pre.run_id
    assert run.state == "withheld"


async def test_every_refusal_is_the_same_with_the_plain_branch_on_and_off(codex_world, tmp_path):
    """Whatever phase 1 does not plan is the models' in their words: an unknown recipe, parameter, target or
    kind, a recipe that is not the bare shape or not TOML, a notebook of that name, a halt in force."""
    shelf = Path(os.environ["RELAY_HOME"]) / "recipes"
    shelf.mkdir(parents=True)
    (shelf / "broken.toml").write_text("name = \n")
    (shelf / "two.toml").write_text((REPO / "recipes" / "ping.toml").read_text().replace(
        '[params.target]', '[params.other]\ntype = "text"\n\n[params.target]'))
    env = _env()
    cases = [("nosuch", "target=codex:idle-one"), ("ping", "tgt=codex:idle-one"), ("ping", "target=codex:nobody"),
             ("ping", "target=nokind:x"), ("ping", "target=codex:"), ("broken", "target=codex:idle-one"),
             ("two", "target=codex:idle-one"), ("ping", "target=idle-one"), ("ping", "target=host/codex:idle-one")]
    for recipe, param in cases:
        (code, out, err), way = await anyio.to_thread.run_sync(on_off, env, "run", recipe, "-p", param)
        assert code != 0 and (out or err) and way not in ("shown", "handed over"), (recipe, param, way, out, err)
    # a notebook ping.py in ./recipes comes before the shipped ping.toml: the notebook runner's (it takes no target)
    (tmp_path / "proj" / "recipes").mkdir(parents=True)
    (tmp_path / "proj" / "recipes" / "ping.py").write_text("# %%\nprint('a notebook')\n")
    (code, out, err), way = await anyio.to_thread.run_sync(
        lambda: on_off(env, "run", "ping", "-p", "target=codex:idle-one", cwd=tmp_path / "proj"))
    assert code != 0 and "notebook" in out + err and way == "models", (out, err, way)
    Ledger(ledger_path()).halt("a test halt", by="test")
    (code, out, err), way = await anyio.to_thread.run_sync(on_off, env, "run", "ping", "-p", "target=codex:idle-one")
    assert code != 0 and "relay-halt is in force" in out + err and way == "models"


# -- what phase 1 loads --------------------------------------------------------------------------------------------

async def test_phase_one_loads_no_pydantic_event_loop_or_libtmux(codex_world):
    """`relay run`'s phase 1 for a Codex thread, reply route included, imports no pydantic, asyncio, anyio,
    libtmux or prompt_toolkit, nor the agents, transports or runs packages. Old code: no run_plain module."""
    pinned = await anyio.to_thread.run_sync(phase_one_modules, "codex:idle-one")
    assert pinned == "PIN True [] [] False"
