"""Resume from the journal, not from hope (issue 38): a resumed notebook calls a send sent only
where the ledger holds the operator's approval for its plan and a transport stage after it.

On e6902ec: a declined send was resumed as `... was sent in run R (withheld): not sent again`,
and a row inserted by hand into the ledger was believed. Now a declined (or withheld, or never
answered) send is shown as such and asked again, and a row the run's journal did not write stops
the resume with one line, nothing sent.
"""

from __future__ import annotations

import json

import pytest

from relay_repl.session.runs.journal import JournalMismatch
from relay_repl.session.runs.notebook import run_notebook
from tests.session.test_runner import mk

pytestmark = pytest.mark.anyio

NB = '''# %% ask
d = await session.send("fake:a", "status?")
print("STATE", d.state.value)

# %% stop here the first time
import os
assert os.path.exists(os.environ["NB_FLAG"]), "flag missing"
'''


@pytest.fixture
def flag(tmp_path, monkeypatch):
    f = tmp_path / "flag"
    monkeypatch.setenv("NB_FLAG", str(f))
    return f


def nb(tmp_path):
    p = tmp_path / "once.py"
    p.write_text(NB)
    return p


async def stopped_run(tmp_path, answers):
    """A first run that stops at its second cell (the flag is missing), after cell 1's send."""
    s, rep, gate, led, lines = mk(tmp_path, answers)
    run = await run_notebook(s, nb(tmp_path), {})
    assert run.state == "error"
    return run, rep, led


async def test_a_declined_send_is_shown_as_declined_and_asked_again(tmp_path, flag, capsys):
    first, rep, led = await stopped_run(tmp_path, [False])
    assert rep.received == []
    rid = first.cells[0].deliveries[0].relay_id
    flag.touch()
    s2, rep2, gate2, _, _ = mk(tmp_path, [True], led=led)
    again = await run_notebook(s2, nb(tmp_path), {}, resume=first.id)
    out = capsys.readouterr().out
    assert again.state == "done", again.reason
    assert f"{rid} to fake:a not sent: declined in run {first.id}; planned and asked again" in out
    assert "was sent in run" not in out
    assert len(gate2.shown) == 1 and gate2.shown[0].relay_id == rid  # asked again, under the same id
    assert len(rep2.received) == 1 and "STATE in_turn" in again.cells[0].stdout


async def test_a_sent_send_is_still_answered_from_the_ledger(tmp_path, flag, capsys):
    first, rep, led = await stopped_run(tmp_path, [True])
    assert len(rep.received) == 1
    flag.touch()
    s2, rep2, gate2, _, _ = mk(tmp_path, [True], led=led)
    again = await run_notebook(s2, nb(tmp_path), {}, resume=first.id)
    assert again.state == "done" and rep2.received == [] and gate2.shown == []
    assert f"was sent in run {first.id}" in capsys.readouterr().out


async def test_a_resumed_resume_keeps_the_journal_whole(tmp_path, flag):
    """The resumed run's own journal (its replays included) resumes again without a false alarm."""
    first, rep, led = await stopped_run(tmp_path, [True])
    s2, rep2, gate2, _, _ = mk(tmp_path, [], led=led)
    second = await run_notebook(s2, nb(tmp_path), {}, resume=first.id)
    assert second.state == "error" and rep2.received == []
    flag.touch()
    s3, rep3, gate3, _, _ = mk(tmp_path, [], led=led)
    third = await run_notebook(s3, nb(tmp_path), {}, resume=second.id)
    assert third.state == "done" and rep3.received == [] and gate3.shown == []


def forge(led, sql: str, *args) -> None:
    with led._tx() as con:
        con.execute(sql, args)


@pytest.mark.parametrize("how", ["approval-and-stage", "outcome", "unknown-id", "edited-body", "inserted-send"])
async def test_a_ledger_row_the_run_did_not_write_stops_the_resume(tmp_path, flag, how):
    first, rep, led = await stopped_run(tmp_path, [False])
    rid = first.cells[0].deliveries[0].relay_id
    now = 1.0e9
    if how == "approval-and-stage":  # the hand-made proof of a send the operator declined
        forge(led, "INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, 'answer', NULL, ?, ?)", now, rid,
              json.dumps({"approved": True, "approval": "0" * 64}))
        forge(led, "INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, 'stage:write', NULL, ?, ?)",
              now, rid, json.dumps({"state": "in_turn", "detail": "written"}))
        needle = "which the run's journal records as not approved"
    elif how == "outcome":
        forge(led, "INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, 'outcome', NULL, ?, ?)", now, rid,
              json.dumps({"state": "in_turn"}))
        needle = "but no approval of its plan is recorded"
    elif how == "unknown-id":
        forge(led, "UPDATE events SET data = json_set(data, '$.relay_id', 'me-999') WHERE kind = 'notebook-send'")
        needle = "does not match what the run wrote"
    elif how == "edited-body":
        forge(led, "UPDATE events SET data = json_set(data, '$.body', 'status, edited?') WHERE kind = 'delivery'")
        needle = "names another target or body than the run's journal"
    else:  # a journal row written by hand, for a call the run never made
        forge(led, "INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, 'notebook-send', NULL, ?, ?)",
              now, first.id, json.dumps({"run": first.id, "cell": 1, "call": 2, "target": "fake:a", "body": "x",
                                         "want": "none", "relay_id": rid}))
        needle = "does not match what the run wrote"
    flag.touch()
    s2, rep2, gate2, _, _ = mk(tmp_path, [True] * 3, led=led)
    with pytest.raises(JournalMismatch) as err:
        await run_notebook(s2, nb(tmp_path), {}, resume=first.id)
    msg = str(err.value)
    assert needle in msg and "not resumed, nothing was sent" in msg and "\n" not in msg, msg
    assert rep2.received == [] and gate2.shown == []


async def test_an_unissued_relay_id_in_a_sealed_row_stops_the_resume(tmp_path, flag):
    """Even a row with a valid seal (written by a tool that recomputes it) names only ids this ledger issued."""
    from relay_repl.session.runs.journal import sealed

    first, rep, led = await stopped_run(tmp_path, [False])
    row = sealed("notebook-send", {"run": first.id, "cell": 1, "call": 2, "target": "fake:a", "body": "x",
                                   "want": "none", "relay_id": "me-999"})
    forge(led, "INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, 'notebook-send', NULL, ?, ?)",
          1.0e9, first.id, json.dumps(row))
    s2, rep2, gate2, _, _ = mk(tmp_path, [True] * 3, led=led)
    with pytest.raises(JournalMismatch, match="relay id me-999 was never issued by this ledger"):
        await run_notebook(s2, nb(tmp_path), {}, resume=first.id)
    assert rep2.received == [] and gate2.shown == []


async def test_edited_parameters_in_the_start_row_stop_the_resume(tmp_path, flag):
    first, rep, led = await stopped_run(tmp_path, [False])
    forge(led, "UPDATE events SET data = json_set(data, '$.params', json('{\"who\": \"fake:b\"}')) "
               "WHERE kind = 'notebook-start'")
    s2, rep2, gate2, _, _ = mk(tmp_path, [True] * 3, led=led)
    with pytest.raises(JournalMismatch, match=r"\(notebook-start\) does not match what the run wrote"):
        await run_notebook(s2, nb(tmp_path), {}, resume=first.id)
    assert gate2.shown == []
