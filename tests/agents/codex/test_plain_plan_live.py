"""Live: `relay send codex:beta MESSAGE`'s plain pre-plan (frontends/send_plain.py with Codex's hook)
against the models' plan for the same send, on the shared lab's real Codex (its daemon holding the
thread, "status idle from daemon", the pane its footer names): the same fields, digest and printed
bytes. Plan mode live: tests/transports/test_codex_plan_mode_live.py; the other cases over fixtures:
test_plain_plan.py."""

from __future__ import annotations

import pytest

import relay_repl.lab.helpers as helpers
from tests.frontends.send_plain_helpers import same_plan

pytestmark = pytest.mark.live


def test_a_codex_send_plans_plainly_as_the_models_plan_it(lab):
    helpers.wait_idle("beta", timeout=60)
    fields = same_plan("codex:beta", "plain plan check")
    assert fields["transport"] == "codex-queue" and "tmux would also work" in fields["fallback"]
    assert "lock held by daemon pid" in fields["identified_by"] and "status idle from daemon" in fields["identified_by"]
    assert "footer names thread 'beta'" in fields["identified_by"] and fields["notes"] == []


def test_a_runs_first_plan_to_codex_plans_plainly_as_the_models_plan_it(lab):
    """`relay run ping -p target=codex:beta`'s first plan printed before the models (frontends/run_plain.py) is
    the models' first plan for the same run id and relay id: fields, digest, bytes, with the reply route the lab
    Codex's config.toml gives (tests/frontends/run_plain_helpers.same_run_plan; the gate says No)."""
    from tests.frontends.run_plain_helpers import same_run_plan

    helpers.wait_idle("beta", timeout=60)
    fields = same_run_plan("ping", "target", "codex:beta")
    assert fields["transport"] == "codex-queue" and fields["heading"].endswith("step 1: tell codex:beta")
    assert fields["reply_route"] and fields["reply_route"] != "none", fields["reply_route"]


def test_relay_run_ping_shows_its_first_plan_early_once_and_is_acked_on_y(lab):
    """The console script end to end in a terminal: `relay run ping -p target=codex:beta` prints its first plan
    before the models (frontends/run_plain.py); the models' plan is the same, so it is not printed again; y
    approves it, the thread acks the relay id shown, and the run is done under the run id the heading shows."""
    import re

    from relay_repl.store.ledger import Ledger
    from relay_repl.store.paths import ledger_path
    from tests.frontends.run_plain_helpers import plain_run
    from tests.frontends.test_cli_send_live import run_in_terminal

    Ledger(ledger_path()).close()  # the plain pre-plan plans only against a ledger that exists
    helpers.wait_idle("beta", timeout=60)
    assert plain_run("ping", "target", "codex:beta")[0].digest is not None  # the plain path plans this run
    rc, text = run_in_terminal(["run", "ping", "-p", "target=codex:beta"], "y", timeout=150)
    assert rc == 0, text
    assert text.count("Plan: send to codex:beta") == 1 and "the plan changed" not in text, text
    run_id = re.search(r"recipe ping, run (run-[0-9a-f]{8}), round 1/1", text).group(1)
    rid = text.split("(relay id ")[1].split(")")[0]
    flat = "".join(text.split())  # the terminal wraps the result table
    assert f"<Run{run_id}ping:done" in flat and f"ack{rid}" in flat, text
    helpers.wait_idle("beta", timeout=60)
