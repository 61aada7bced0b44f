"""The real `relay` REPL, driven through a private tmux server like an operator would."""

from __future__ import annotations

import re
import shutil

import pytest

from relay_repl.core.envelope import Envelope
from relay_repl.store.ledger import Ledger

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")


def test_repl_shows_session_then_gates_a_send(repl, relay_home):
    repl.wait_for("<Session me=operator:relay@")  # its own summary, once built (typed earlier, its repr says loading)
    repl.type_line("session")
    screen = repl.wait_for(lambda s: s.count("<Session me=operator:relay@") >= 2)
    assert re.search(r"fake:inbox +- +idle +- +- +memory", screen)

    # answer n: nothing happens, and the ledger records the refusal
    repl.type_line('d1 = await session.send("fake:inbox", "first try", want="ack")')
    repl.wait_for("Proceed? [y/N]")
    repl.keys("n", "Enter")
    repl.wait_for("declined: nothing was done")
    repl.type_line('print("HELD", len(session._transports["memory"].received))')
    repl.wait_for("HELD 0")

    led = Ledger(relay_home / "ledger.sqlite")
    answers = led.events(kind="answer")
    assert [a.data["approved"] for a in answers] == [False]
    outcome = led.events(kind="outcome", relay_id=answers[0].relay_id)
    assert outcome[0].data["state"] == "withheld"

    # answer y: the fake transport receives exactly the planned payload
    repl.type_line('d2 = await session.send("fake:inbox", "second try", want="ack")')
    repl.wait_for(lambda s: s.count("Proceed? [y/N]") >= 2)
    repl.keys("y", "Enter")
    repl.wait_for("[confirm] in_turn")
    repl.type_line('print("GOT", repr(session._transports["memory"].received[0]))')
    screen = repl.wait_for("GOT '")

    plans = led.events(kind="plan")
    assert len(plans) == 2
    payload = plans[1].data["payload"]
    assert f"GOT {payload!r}" in screen
    env = Envelope.parse(payload)
    assert env.body == "second try" and env.want == "ack" and env.hop == 0
    assert [a.data["approved"] for a in led.events(kind="answer")] == [False, True]
    assert led.events(kind="outcome")[-1].data["state"] == "in_turn"


def test_a_relay_error_prints_one_line_and_a_bug_keeps_its_traceback(repl):
    """An error relay raises on purpose reads as its one sentence with the next step, as the CLI
    prints it; the operator's own mistake (not relay's) keeps Python's traceback."""
    repl.wait_for("<Session me=operator:relay@")
    repl.type_line("session.wait_reply(1, 2)")  # a MisnamedAttribute: the message names the right call
    screen = repl.wait_for("relay: wait_reply is on the delivery")
    repl.type_line('await session.send("nosuch:target", "hi")')  # UnknownTarget, raised before any plan
    screen = repl.wait_for("relay: ")
    screen = repl.wait_for(lambda s: s.count("relay: ") >= 2)
    assert "nosuch:target" in screen.split("relay: ")[-1]
    assert "Traceback" not in screen and "MisnamedAttribute" not in screen and "UnknownTarget" not in screen
    assert "Proceed? [y/N]" not in screen
    repl.type_line("1/0")
    screen = repl.wait_for("ZeroDivisionError")
    assert "Traceback" in screen


def test_a_failing_background_task_is_shown_once_and_the_prompt_comes_back(repl):
    """A task started in `tg` that fails: its error is shown once, `tg` is a new task group and the
    REPL goes on. Before, the REPL ran as the task group's body and ptpython's read loop swallowed the
    scope's redelivered cancellation: a traceback printed forever and the prompt never came back
    (CI saw it as `session.watch()` never drawing)."""
    repl.wait_for("<Session me=operator:relay@")
    repl.type_line('tg.start_soon(anyio.sleep, "not a number")')
    screen = repl.wait_for("`tg` is a new task group now and the REPL goes on", timeout=15)
    assert "TypeError" in screen  # the operator's own bug keeps its traceback
    repl.type_line('tg.start_soon(anyio.sleep, 0); print("ALIVE", 6 * 7)')
    screen = repl.wait_for("ALIVE 42", timeout=15)
    assert "Cancelled via cancel scope" not in screen
    assert screen.count("a task started in `tg` failed") == 1
    repl.type_line("print('INBOX', session.inbox is not None)")  # the session's own work was not stopped
    repl.wait_for("INBOX True", timeout=15)
