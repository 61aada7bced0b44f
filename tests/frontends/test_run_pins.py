"""`relay run` with what a plain pre-plan showed pinned (issue 40): the run id and the first relay id on
the run's first plan are the ones the run records and sends, and the pre-shown gate is the one asked.

Phase 2 of a pre-planned `relay run` is today's `cmd_run` with `args.preshown = (gate, pins)`
(as `relay send`'s is, frontends/send_plain.py); these tests hold that plumbing, over the fake
session, in process."""

from __future__ import annotations

import json

from relay_repl.core.run_words import new_run_id, step_heading

PINNED_RUN = "run-0badc0de"


def _run(extra, *words):
    from relay_repl.frontends.cli import main

    return main(["--fake", "run", "ping", "-p", "target=fake:inbox", *words], extra=extra)


def _recording_gate(plans):
    async def gate(plan) -> bool:
        plans.append(plan)
        return False

    return gate


def _run_events(run_id):
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    try:
        return [(e.kind, e.data) for e in led.events(relay_id=run_id)]
    finally:
        led.close()


def test_the_pinned_run_id_and_first_relay_id_are_the_first_plans_and_the_runs(capsys):
    plans: list = []
    code = _run({"preshown": (_recording_gate(plans), {"run_id": PINNED_RUN, "relay_id": "op-pinned-7"})})
    assert code == 1  # the gate said No: withheld
    assert len(plans) == 1
    first = plans[0]
    assert first.relay_id == "op-pinned-7" and "id=op-pinned-7 " in first.payload
    assert first.heading == step_heading("ping", PINNED_RUN, 1, 1, 1, "tell", "fake:inbox")
    assert f"(run {PINNED_RUN})" in first.payload  # the body's {run}
    kinds = [k for k, _ in _run_events(PINNED_RUN)]
    assert kinds[0] == "run-start" and "run-step" in kinds and kinds[-1] == "run-end"
    step = next(d for k, d in _run_events(PINNED_RUN) if k == "run-step")
    assert "op-pinned-7" in json.dumps(step)  # the journal row names the id shown
    assert PINNED_RUN in capsys.readouterr().out


def test_without_pins_the_run_draws_its_own_ids_and_asks_its_own_gate(capsys):
    plans: list = []
    assert _run({"preshown": (_recording_gate(plans), None)}) == 1
    out = capsys.readouterr().out
    assert plans == [] and "No terminal to ask on" in out  # nothing pre-shown: today's gate shows and asks
    assert "recipe ping, run run-" in out and PINNED_RUN not in out and "op-pinned-7" not in out


def test_a_dry_run_or_json_run_ignores_pins(capsys):
    plans: list = []
    pins = {"run_id": PINNED_RUN, "relay_id": "op-pinned-7"}
    assert _run({"preshown": (_recording_gate(plans), pins)}, "--dry-run") == 0
    assert plans == [] and PINNED_RUN not in capsys.readouterr().out


def test_the_run_id_has_one_home():
    from relay_repl.session.runs import runner

    assert runner.new_run_id is new_run_id
    rid = new_run_id()
    assert rid.startswith("run-") and len(rid) == 12 and int(rid[4:], 16) >= 0
