"""The gate of a plan already on screen (session/core/preshown_gate.py, issue 40): an equal plan is
not printed again, a changed one is printed under one line saying so, and keys typed before the
question are discarded with a line that says when they were typed. The whole send, both ways, on a
real Claude registry: tests/frontends/test_send_plain.py."""

from __future__ import annotations

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.input.typeahead import store_typeahead
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.output import DummyOutput

from relay_repl.core.approval import plan_digest
from relay_repl.session.core.preshown_gate import CHANGED, PreShownGate
from tests.session.test_gate import PLAN

pytestmark = pytest.mark.anyio


async def _ask(shown: str, typeahead: str, typed: str) -> tuple[bool, list[str]]:
    written: list[str] = []
    with create_pipe_input() as inp:
        if typeahead:
            store_typeahead(inp, [KeyPress(c) for c in typeahead])
        inp.send_text(typed)
        gate = PreShownGate(shown, input=inp, output=DummyOutput(), write=written.append)
        return await gate(PLAN), written


async def test_keys_typed_before_the_question_never_answer_it_and_the_line_says_so():
    answer, written = await _ask(plan_digest(PLAN), "y", "\r")
    assert answer is False
    assert written[0] == "(1 key typed before the question was asked: discarded, not an answer)"
    assert not any(w.startswith("Plan:") for w in written)


async def test_the_shown_plan_is_asked_without_printing_it_again():
    answer, written = await _ask(plan_digest(PLAN), "", "y\r")
    assert answer is True and written == ["approved"]


async def test_another_plan_is_printed_under_the_changed_line_then_asked():
    answer, written = await _ask("0" * 64, "", "y\r")
    assert answer is True and written == [CHANGED, PLAN.render(), "approved"]


async def test_only_the_first_plan_is_compared():
    written: list[str] = []
    with create_pipe_input() as inp:
        gate = PreShownGate(plan_digest(PLAN), input=inp, output=DummyOutput(), write=written.append)
        inp.send_text("n\r")
        await gate(PLAN)
        inp.send_text("n\r")
        await gate(PLAN)  # a second plan of the same process is shown as TerminalGate shows it
    assert [w for w in written if w.startswith("Plan:")] == [PLAN.render()]
