from __future__ import annotations

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from relay_repl.session.gate import DenyGate, ScriptedGate, TerminalGate
from relay_repl.core.plan import Plan

pytestmark = pytest.mark.anyio

PLAN = Plan(
    action="send to codex:fix-tests",
    target="codex:fix-tests (pid 12, idle)",
    identified_by="session_index.jsonl thread_name + flock holder",
    transport="codex-queue",
    fallback="tmux %3",
    payload="[relay/1 from=operator:relay@me to=peer id=me-1 hop=0 want=ack] rerun the suite",
    delivered_when="rollout UserMessage with our client_id in a queue turn",
    notes=("target is a goal-controller thread: it never goes idle",),
    relay_id="me-1",
)


def test_plan_renders_four_parts_and_exact_payload():
    text = PLAN.render(width=60)
    for label in ("1 target", "2 transport", "3 payload", "4 delivered", "! note"):
        assert label in text
    # the payload line is verbatim even when wider than the render width
    assert f"3 payload     {PLAN.payload}" in text
    assert "fallback: tmux %3" in text


async def _ask(keys: str) -> tuple[bool, list[str]]:
    shown: list[str] = []
    with create_pipe_input() as inp:
        inp.send_text(keys)
        gate = TerminalGate(input=inp, output=DummyOutput(), write=shown.append)
        return await gate(PLAN), shown


@pytest.mark.parametrize(
    "keys, expected",
    [("y", True), ("Y", True), ("n", False), ("N", False), ("\r", False), ("\x03", False), ("x z q n", False), ("abc y", True)],
)
async def test_terminal_gate_answers(keys, expected):
    answer, shown = await _ask(keys)
    assert answer is expected
    assert shown[0] == PLAN.render()
    assert shown[-1] == ("approved" if expected else "declined: nothing was done")


async def test_no_terminal_means_no():
    shown: list[str] = []
    gate = TerminalGate(write=shown.append, isatty=lambda: False)
    assert await gate(PLAN) is False
    assert "No terminal" in shown[-1]


async def test_scripted_and_deny_gates():
    g = ScriptedGate([True, False])
    assert [await g(PLAN), await g(PLAN), await g(PLAN)] == [True, False, False]
    assert len(g.shown) == 3
    assert await DenyGate()(PLAN) is False
