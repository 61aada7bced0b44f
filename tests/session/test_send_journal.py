"""One journal model for resume (issue 35): notebooks and recipes write and read one send row,
`JournalSend`, and the rows on disk stay those the previous version wrote, so a run stopped by it
resumes here without sending twice.

The old rows are written here literally (the fields and the digest the previous version wrote,
with its digest function spelled out), not by the code under test."""

from __future__ import annotations

import hashlib
import json

import pytest

from relay_repl.session.runs.notebook import run_notebook
from relay_repl.session.runs.send_journal import JournalSend
from tests.session.test_notebook_resume import flag, nb, stopped_run  # noqa: F401 - the fixture
from tests.session.test_recipe_resume_journal import declined_at_round_two
from tests.session.test_runner import mk

pytestmark = pytest.mark.anyio


def old_seal(kind: str, data: dict) -> dict:
    """The previous version's digest of a journal row, spelled out (not imported)."""
    body = {k: v for k, v in data.items() if k != "digest"}
    raw = json.dumps(body, sort_keys=True, ensure_ascii=True)
    return {**body, "digest": hashlib.sha256((kind + "\0" + raw).encode()).hexdigest()}


def rewrite_as_old(led, run_id: str, kind: str, shape) -> int:
    """Every `kind` row of run `run_id` replaced by the previous version's row for the same send."""
    n = 0
    with led._tx() as con:
        rows = con.execute("SELECT seq, data FROM events WHERE kind = ? AND relay_id = ?", (kind, run_id)).fetchall()
        for seq, data in rows:
            con.execute("UPDATE events SET data = ? WHERE seq = ?", (json.dumps(old_seal(kind, shape(json.loads(data)))),
                                                                      seq))
            n += 1
    return n


def old_notebook_send(d: dict) -> dict:
    """A `notebook-send` row as the previous version wrote it for a send (not a replay)."""
    return {"run": d["run"], "cell": d["cell"], "sha256": d["sha256"], "call": d["call"], "target": d["target"],
            "body": d["body"], "want": d["want"], "relay_id": d["relay_id"], "path": d["path"]}


def old_run_step(d: dict) -> dict:
    return {"run": d["run"], "round": d["round"], "step": d["step"], "kind": d["kind"], "target": d["target"],
            "relay_id": d["relay_id"], "hop": d["hop"], "want": d["want"]}


async def test_both_runners_write_the_rows_the_previous_version_wrote(tmp_path, flag):  # noqa: F811
    first, rep, led = await stopped_run(tmp_path, [True])
    (ev,) = led.events(relay_id=first.id, kind="notebook-send")
    assert ev.data == old_seal("notebook-send", old_notebook_send(ev.data)), "the same fields, the same digest"
    sent = JournalSend.read(first.id, ev)
    assert (sent.runner, sent.at, sent.target, sent.body) == ("notebook", (1, 1), "fake:a", "status?")
    assert {"run": first.id, **sent.row()} == {k: v for k, v in ev.data.items() if k != "digest"}

    run, _, led2, declined = await declined_at_round_two(tmp_path / "r")
    steps = led2.events(relay_id=run.id, kind="run-step")
    for e in steps:
        assert e.data == old_seal("run-step", old_run_step(e.data))
        back = JournalSend.read(run.id, e)
        assert back.runner == "recipe" and {"run": run.id, **back.row()} == {k: v for k, v in e.data.items()
                                                                             if k != "digest"}
    assert JournalSend.read(run.id, steps[-1]).relay_id == declined


async def test_a_notebook_run_journaled_by_the_previous_version_resumes_without_sending_twice(tmp_path, flag,  # noqa: F811
                                                                                               capsys):
    first, rep, led = await stopped_run(tmp_path, [True])
    assert len(rep.received) == 1
    assert rewrite_as_old(led, first.id, "notebook-send", old_notebook_send) == 1
    flag.touch()
    s2, rep2, gate2, _, _ = mk(tmp_path, [True], led=led)
    again = await run_notebook(s2, nb(tmp_path), {}, resume=first.id)
    assert again.state == "done", again.reason
    assert rep2.received == [] and gate2.shown == [], "answered from the ledger: not sent again"
    assert f"was sent in run {first.id}" in capsys.readouterr().out


async def test_a_recipe_run_journaled_by_the_previous_version_resumes_without_sending_twice(tmp_path):
    run, rep, led, declined = await declined_at_round_two(tmp_path)
    assert rewrite_as_old(led, run.id, "run-step", old_run_step) == 3
    sent_before = set(rep.received)
    s2, rep2, gate2, _, lines2 = mk(tmp_path, [True] * 4, led=led)
    rep2.received = list(rep.received)
    done = await s2.resume(run.id)
    assert done.state == "done", done
    assert len(rep2.received) == len(set(rep2.received)), "no payload sent twice"
    assert sent_before <= set(rep2.received) and len(gate2.shown) == len(rep2.received) - len(sent_before)
