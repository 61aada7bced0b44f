"""A resumed recipe run, from its journal (issue 38): a declined step is shown as declined and asked
again; a ledger row the run's journal did not write stops the resume before anything is sent.
On e6902ec a hand-inserted outcome row made resume call the declined step delivered."""

from __future__ import annotations

import json

import pytest

from relay_repl.core.envelope import Envelope
from relay_repl.session.runs.journal import JournalMismatch
from tests.session.test_runner import TWO, mk, write

pytestmark = pytest.mark.anyio


async def declined_at_round_two(tmp_path):
    s, rep, gate, led, lines = mk(tmp_path, [True, True, False])
    run = await s.run(write(tmp_path, TWO.format(rounds=2)))
    assert run.state == "withheld" and len(rep.received) == 2
    declined = led.events(relay_id=run.id, kind="run-step")[-1].data["relay_id"]
    return run, rep, led, declined


async def test_a_declined_step_is_shown_as_declined_and_asked_again(tmp_path):
    run, rep, led, declined = await declined_at_round_two(tmp_path)
    s2, rep2, gate2, _, lines2 = mk(tmp_path, [True] * 4, led=led)
    rep2.received = rep.received
    done = await s2.resume(run.id)
    assert done.state == "done", done
    assert any(f"{declined} not sent: declined in run {run.id}; planned and asked again" in ln for ln in lines2), lines2
    assert len({Envelope.parse(p).id for p in rep.received}) == 4


@pytest.mark.parametrize("how", ["outcome", "inserted-step", "edited-step"])
async def test_a_row_the_run_did_not_write_stops_the_resume(tmp_path, how):
    run, rep, led, declined = await declined_at_round_two(tmp_path)
    with led._tx() as con:
        if how == "outcome":  # "it was delivered after all", by hand
            con.execute("INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (1e9, 'outcome', NULL, ?, ?)",
                        (declined, json.dumps({"state": "in_turn"})))
        elif how == "inserted-step":
            con.execute("INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (1e9, 'run-step', NULL, ?, ?)",
                        (run.id, json.dumps({"run": run.id, "round": 2, "step": 2, "kind": "ask", "target": "fake:b",
                                             "relay_id": declined, "hop": 2})))
        else:
            con.execute("UPDATE events SET data = json_set(data, '$.target', 'fake:b') WHERE kind = 'run-step' "
                        "AND json_extract(data, '$.relay_id') = ?", (declined,))
    s2, rep2, gate2, _, lines2 = mk(tmp_path, [True] * 4, led=led)
    rep2.received = []
    if how == "outcome":
        done = await s2.resume(run.id)
        assert done.state == "stopped" and "but no approval of its plan is recorded" in done.reason, done
        assert "not resumed, nothing was sent" in done.reason
    else:
        with pytest.raises(JournalMismatch, match="does not match what the run wrote"):
            await s2.resume(run.id)
    assert rep2.received == [] and gate2.shown == []


async def test_an_edited_recipe_text_in_the_start_row_stops_the_resume(tmp_path):
    run, rep, led, declined = await declined_at_round_two(tmp_path)
    with led._tx() as con:
        con.execute("UPDATE events SET data = json_set(data, '$.source', replace(json_extract(data, '$.source'), "
                    "'ask', 'ask to delete')) WHERE kind = 'run-start'")
    s2, rep2, gate2, _, _ = mk(tmp_path, [True] * 4, led=led)
    with pytest.raises(JournalMismatch, match=r"\(run-start\) does not match what the run wrote"):
        await s2.resume(run.id)
    assert gate2.shown == []
