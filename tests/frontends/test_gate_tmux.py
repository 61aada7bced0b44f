"""The gate through a real terminal (tmux): an answer is `y` then Enter, typed after
the plan it answers was printed. Keys typed ahead (into ptpython's read, or waiting in
the terminal before relay even reads) never approve a plan not yet shown."""

from __future__ import annotations

import shlex
import shutil
import sys

import pytest

from relay_repl.store.ledger import Ledger
from tests.support.tmuxdrive import Screen, python_env

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")

TWO_STEPS = """\
name = "two-steps"
description = "two gated tells to the demo target"
rounds = 1

[[steps]]
kind = "tell"
want = "none"
to = "fake:inbox"
body = "step one"

[[steps]]
kind = "tell"
want = "none"
to = "fake:inbox"
body = "step two"
"""

PROMPT = "Proceed? [y/N] (type y then Enter)"


@pytest.fixture
def recipe(tmp_path):
    path = tmp_path / "two-steps.toml"
    path.write_text(TWO_STEPS)
    return path


def prompts(n: int):
    """The prompt of the n-th plan is drawn below that plan (so it is the one reading keys)."""
    return lambda screen: PROMPT in "".join(screen.split("Plan: send to")[n:n + 1])


def answers(relay_home) -> list[bool]:
    return [a.data["approved"] for a in Ledger(relay_home / "ledger.sqlite").events(kind="answer")]


def start_run(repl, recipe, typed_ahead: str) -> None:
    """Type the run line and, in the same burst, keys meant for plans not yet printed
    (ptpython reads them in one chunk with the line)."""
    repl.pane.send_keys(f'r = await session.run("{recipe}")\r{typed_ahead}', enter=False, literal=True)


def test_yy_typed_ahead_answers_neither_step(repl, recipe, relay_home):
    start_run(repl, recipe, "yy")
    text = repl.wait_for(prompts(1))
    assert "(2 keys typed before this plan was shown: discarded, not an answer)" in text
    repl.keys("y", "Enter")  # step 1: answered after its plan was shown
    repl.wait_for(prompts(2))
    repl.keys("Enter")  # step 2: Enter alone declines it
    text = repl.wait_for("you answered Enter alone")
    assert "declined: nothing was done (send to fake:inbox; you answered Enter alone" in text
    repl.type_line('print("STATE", r.state, len(session.transports["memory"].received))')
    repl.wait_for("STATE withheld 1")
    assert answers(relay_home) == [True, False]


def test_y_enter_typed_ahead_answers_nothing(repl, recipe, relay_home):
    """`y` Enter typed with the run line approves no step: step 1 is answered by the `n`
    typed after its plan was shown, so nothing is sent and step 2 is never asked."""
    start_run(repl, recipe, "y\r")
    repl.wait_for(prompts(1))
    repl.keys("n", "Enter")
    text = repl.wait_for("you answered 'n'")
    assert "declined: nothing was done (send to fake:inbox; you answered 'n'" in text
    repl.type_line('print("STATE", r.state, len(session.transports["memory"].received))')
    repl.wait_for("STATE withheld 0")
    assert answers(relay_home) == [False]


def test_y_enter_after_each_prompt_approves_each_step(repl, recipe, relay_home):
    repl.type_line(f'r = await session.run("{recipe}")')
    for n in (1, 2):
        repl.wait_for(prompts(n))
        repl.keys("y", "Enter")
    repl.type_line('print("STATE", r.state, len(session.transports["memory"].received))')
    repl.wait_for("STATE done 2")
    assert answers(relay_home) == [True, True]


def test_y_then_more_keys_at_step_one_never_reach_step_two(repl, recipe, relay_home):
    """`y` Enter `yy` Enter in one burst at step 1's prompt: the `yy` Enter, typed ahead of
    step 2's plan, neither answers (nor declines) it; the y Enter typed after it does."""
    repl.type_line(f'r = await session.run("{recipe}")')
    repl.wait_for(prompts(1))
    repl.pane.send_keys("y\ryy\r", enter=False, literal=True)
    text = repl.wait_for(prompts(2))
    assert "(3 keys typed before this plan was shown: discarded, not an answer)" in text
    repl.keys("y", "Enter")
    repl.type_line('print("STATE", r.state, len(session.transports["memory"].received))')
    repl.wait_for("STATE done 2")
    assert answers(relay_home) == [True, True]


def test_cli_run_discards_keys_typed_before_the_first_plan(recipe, relay_home):
    """`relay run` from a shell: `yy` typed while relay starts waits in the terminal's
    input queue; it is flushed, and the Enter typed at the prompt declines step 1."""
    cmd = f"{shlex.join([sys.executable, '-m', 'relay_repl', '--fake', 'run', str(recipe)])}; echo RC=$?; sleep 60"
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home)))
    try:
        screen.pane.send_keys("yy", enter=False, literal=True)
        text = screen.wait_for(prompts(1), timeout=30)
        assert "(2 keys typed before this plan was shown: discarded, not an answer)" in text
        screen.keys("Enter")
        text = screen.wait_for("RC=", timeout=30)
        assert "RC=1" in text and "you answered Enter alone" in text, text
    finally:
        screen.close()
    assert answers(relay_home) == [False]


def test_cli_run_y_enter_at_each_prompt_finishes(recipe, relay_home):
    cmd = f"{shlex.join([sys.executable, '-m', 'relay_repl', '--fake', 'run', str(recipe)])}; echo RC=$?; sleep 60"
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home)))
    try:
        for n in (1, 2):
            screen.wait_for(prompts(n), timeout=30)
            screen.keys("y", "Enter")
        text = screen.wait_for("RC=", timeout=30)
        assert "RC=0" in text, text
    finally:
        screen.close()
    assert answers(relay_home) == [True, True]


def test_in_the_repl_each_prompt_is_drawn_below_its_plan(repl, tmp_path, relay_home):
    """The REPL prints through patch_stdout, whose thread writes up to 0.2 s late: the
    gate waits for the plan to be on the screen before it draws the prompt and reads keys.
    At the first moment the n-th prompt is on the screen, the n-th plan is above it."""
    steps = "".join(f'\n[[steps]]\nkind = "tell"\nwant = "none"\nto = "fake:inbox"\nbody = "step {i}"\n'
                    for i in range(1, 6))  # hop cap 4: five steps at most
    path = tmp_path / "five-steps.toml"
    path.write_text(f'name = "five-steps"\ndescription = "five gated tells"\nrounds = 1\n{steps}')
    repl.type_line(f'r = await session.run("{path}")')
    for n in range(1, 6):
        text = repl.wait_for(lambda t, n=n: t.count(PROMPT) >= n)
        assert text.count(PROMPT) == n and text.rindex(PROMPT) > text.rindex(f"hop={n - 1} want=none] step {n}"), text
        repl.keys("y", "Enter")
    repl.type_line('print("STATE", r.state, len(session.transports["memory"].received))')
    repl.wait_for("STATE done 5")
    assert answers(relay_home) == [True] * 5
