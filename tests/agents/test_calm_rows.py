"""calm_rows: what a "nothing reached the pane" check compares leaves out only the client's own timer rows."""

from relay_repl.agents.claude_code import fidelity as claude_fidelity
from relay_repl.agents.fidelity import calm_rows

MARKS = claude_fidelity.MARKS
IDLE = ["  done", "", "─" * 20, "❯\u00a0", "─" * 20, "  ? for shortcuts"]
HINT = ["  done", "                 ◐ medium · /effort", "─" * 20, "❯\u00a0", "─" * 20, "  ? for shortcuts"]


def test_the_effort_hint_coming_or_going_is_not_a_change():
    assert calm_rows(IDLE, MARKS) == calm_rows(HINT, MARKS)


def test_a_key_that_reached_the_composer_is_a_change():
    typed = [r if not r.startswith("❯") else "❯\u00a0y" for r in IDLE]
    assert calm_rows(typed, MARKS) != calm_rows(IDLE, MARKS)
    assert calm_rows(typed, MARKS) != calm_rows(HINT, MARKS)


def test_a_client_without_own_redraws_keeps_every_visible_row():
    from relay_repl.agents.codex import fidelity as codex_fidelity

    assert calm_rows(HINT, codex_fidelity.MARKS) == [r.rstrip() for r in HINT if r.strip()]
