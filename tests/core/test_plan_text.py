"""core/plan_text.py: the plan's text and digest over plain fields, the bytes and digest the Plan gives.

A send's pre-plan path (issue 40) prints a plan without pydantic; the models, loaded after it is on
screen, must prove they would act on that very plan (same digest) before a y counts.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from relay_repl.core.approval import plan_digest
from relay_repl.core.plan import Plan
from relay_repl.core.plan_text import PLAN_FIELDS, fields_digest, plan_fields, render_plan

HOSTILE = dict(action="send", target="codex:\x1b[31mred\u202e", identified_by="its pane\x07", transport="tmux",
               payload="two\nlines \u202e and " + "x" * 90, delivered_when="the rollout " * 12,
               heading="recipe review\x1b]0;t\x07", reply_route="relay reply", files=("creates f",), notes=("n1", "n2"),
               relay_id="me-3")

# what Plan.render printed before its text moved here (main 1dfef9c), byte for byte
HOSTILE_TEXT = (
    "recipe review\\x1b]0;t\\x07\nPlan: send  (relay id me-3)\n"
    "  1 target      codex:\\x1b[31mred⟨U+202E⟩ — identified by its pane\\x07\n"
    "  2 transport   tmux; fallback: none\n"
    "  3 payload     two\nlines ⟨U+202E⟩ and " + "x" * 90 + "\n"
    "  4 delivered   the rollout the rollout the rollout the rollout the rollout the rollout the rollout\n"
    "                the rollout the rollout the rollout the rollout the rollout\n"
    "    reply via   relay reply\n    files       creates f\n  ! note        n1\n  ! note        n2"
)

CASES = [
    HOSTILE,
    dict(action="send to claude:alpha", target="claude:alpha (pid 7, pane %0, idle)", identified_by="sessions/7.json",
         transport="claude-code-socket", fallback="none (a plain send uses one transport; tmux would also work)",
         payload="[relay/1 from=operator:relay@me to=peer id=me-1 hop=0 want=none] hi", delivered_when="a record",
         files=("creates /x/7.sock",), notes=("written to /x.sock",), relay_id="me-1"),
    dict(action="register inbox", target="t", identified_by="", transport="t", payload="", delivered_when="d"),
]


def test_the_fields_are_plans_fields_in_its_order():
    assert PLAN_FIELDS == tuple(Plan.model_fields)


def test_the_text_is_the_bytes_plan_render_printed_before():
    assert render_plan(plan_fields(**HOSTILE)) == HOSTILE_TEXT
    assert Plan(**HOSTILE).render() == HOSTILE_TEXT


@pytest.mark.parametrize("kw", CASES, ids=["hostile", "claude", "bare"])
@pytest.mark.parametrize("width", [100, 60])
def test_plain_fields_give_the_plans_text_and_digest(kw, width):
    plan = Plan(**kw)
    fields = plan_fields(**kw)
    assert fields == plan.model_dump(mode="json")
    assert render_plan(fields, width) == plan.render(width)
    assert fields_digest(fields) == plan_digest(plan)


def test_a_changed_field_changes_the_digest():
    base = plan_fields(**CASES[1])
    for name in PLAN_FIELDS:
        changed = dict(base)
        changed[name] = ["other"] if isinstance(base[name], list) else "other"
        assert fields_digest(changed) != fields_digest(base), name


def test_unknown_or_missing_fields_are_refused():
    with pytest.raises(TypeError, match="no field"):
        plan_fields(**CASES[2], colour="red")
    with pytest.raises(TypeError, match="needs"):
        plan_fields(action="send")


def test_the_plain_text_imports_no_pydantic_dataclasses_or_event_loop():
    code = ("import sys, relay_repl.core.plan_text; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'dataclasses', 'asyncio', 'anyio')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
