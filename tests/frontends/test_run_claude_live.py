"""Live: `relay run ping -p target=claude:alpha` from a shell, through the console script (issue 40).

A Claude run's first plan is the operator inbox's listing as a Claude peer: the run's plain phase 1 prints
it (frontends/run_plain.py, agents/claude_code/plain_plan.inbox_listing_plan over peer_record.py) after
the verified-client check (`claude --version`, one process, which the models take too), and the models
build the same plan from the same pinned values. On the real client: phase 1's plan is the models'
(fields, digest, bytes); end to end, the listing line and its plan shown once, y lists the inbox, y sends
the step, alpha acks the relay id shown over its native reply."""

from __future__ import annotations

import os
import re
import shlex

import pytest

import relay_repl.lab.helpers as helpers
from tests.frontends.test_cli_send_live import RELAY
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live

PROMPT = "Proceed? [y/N]"


def test_a_claude_runs_first_plan_is_printed_plainly_as_the_models_plan_it(lab):
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.paths import ledger_path
    from tests.frontends.test_run_plain_claude import same_listing_plan

    Ledger(ledger_path()).close()  # (the plain pre-plan reads only a ledger that exists)
    helpers.wait_idle("alpha", timeout=60)
    fields = same_listing_plan("claude:alpha")  # phase 1 printed it; the models' plan, pinned, is the same
    assert '"version":"' in fields["payload"] and "live session" in fields["identified_by"]


def test_relay_run_ping_to_claude_lists_the_inbox_once_and_is_acked_on_y_twice(lab):
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.paths import ledger_path

    Ledger(ledger_path()).close()
    helpers.wait_idle("alpha", timeout=60)
    cmd = f"{shlex.join(RELAY + ['run', 'ping', '-p', 'target=claude:alpha'])}; echo RC=$?; sleep 600"
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))
    try:
        screen.wait_for(PROMPT, timeout=60)
        screen.keys("y", "Enter")  # the inbox listing
        screen.wait_for(lambda t: t.count(PROMPT) >= 2, timeout=60)
        screen.keys("y", "Enter")  # the step's send
        text = screen.wait_for("RC=", timeout=150)
    finally:
        screen.close()
    assert int(text.split("RC=")[-1].split()[0]) == 0, text
    assert text.count("listing this inbox first (asks y/N)") == 1, text
    assert text.count("Plan: list the operator inbox as a Claude peer") == 1, text
    assert text.count("Plan: send to claude:alpha") == 1 and "the plan changed" not in text, text
    payload = text.split("3 payload")[1]
    assert re.search(r'"version":"\d+\.\d+\.\d+"', "".join(payload.split())), text  # the version the listing asked
    run_id = re.search(r"recipe ping, run (run-[0-9a-f]{8}), round 1/1", text).group(1)
    rid = text.split("(relay id ")[1].split(")")[0]
    flat = "".join(text.split())  # the terminal wraps the result table
    assert f"<Run{run_id}ping:done" in flat and f"ack{rid}" in flat, text
    helpers.wait_idle("alpha", timeout=60)
