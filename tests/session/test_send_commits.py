"""Issue 33: the ledger commits of one send. Each commit is relay CPU (its pages written to the
WAL), and a recipe's send was 12-13 of them per target. The writes that stand or fall together,
with nothing shown or done between them, now go in one: the id and its journal row, the
`delivery` event and the plan, the yes and the sent mark. Every event recorded before is
still recorded, in the same order; a halt that wins over a yes still leaves no sent mark."""

from __future__ import annotations

import anyio
import pytest

from tests.session.test_runner import mk

pytestmark = pytest.mark.anyio


def transactions(led):
    """Each committed transaction of `led`'s connection from now on, as the tables and event kinds it wrote."""
    done: list[list[str]] = []
    cur: list[str] = []

    def seen(sql: str) -> None:
        s = sql.strip()
        if s.startswith("BEGIN"):
            cur.clear()
        elif s == "COMMIT":
            done.append(list(cur))
        elif s.startswith("INSERT INTO events"):
            cur.append("event:" + s.split("VALUES (", 1)[1].split(",")[1].strip(" '"))
        elif s.startswith(("INSERT", "UPDATE")):
            cur.append(s.split()[2].split("(")[0])

    led._con.set_trace_callback(seen)
    return done


async def test_a_sends_writes_that_stand_together_are_one_commit_each_and_every_event_stays(tmp_path):
    """Old code: counters, run-step, delivery, plan, answer and relay_ids were six commits (mutant/old code
    fails it: each is a transaction of its own); now three."""
    async with anyio.create_task_group() as tg:
        s, rep, gate, led, lines = mk(tmp_path, [True] * 4, names=("a", "b", "c", "d"), tg=tg, delay=0.2)
        tx = transactions(led)
        run = await s.run("ask-all", question="status?")
    led._con.set_trace_callback(None)
    assert run.state == "done" and sorted(run.replies) == ["fake:a", "fake:b", "fake:c", "fake:d"]
    assert tx.count(["counters", "event:run-step"]) == 4  # the id and its journal row
    assert tx.count(["event:delivery", "event:plan"]) == 4  # what the plan is for, and the plan
    assert tx.count(["event:answer", "relay_ids"]) == 4  # the yes and the sent mark
    for alone in ("event:delivery", "event:plan", "event:answer", "event:run-step"):
        assert [alone] not in tx
    # every event is still there, in the order it was recorded before
    for d in s.deliveries:
        kinds = [e.kind for e in led.events(delivery=d.key)]
        assert kinds[:3] == ["delivery", "plan", "answer"], kinds
        assert "outcome" in kinds and "linked" in kinds
        assert led.was_sent(d.relay_id) and led.sent_to(d.relay_id) == d.target
    assert len([e for e in led.events(kind="run-step")]) == 4


async def test_a_no_writes_the_plan_with_its_delivery_and_no_sent_mark(tmp_path):
    async with anyio.create_task_group() as tg:
        s, rep, gate, led, lines = mk(tmp_path, [False], tg=tg)
        tx = transactions(led)
        d = await s.send("fake:a", "hello", want="none")
        tg.cancel_scope.cancel()
    led._con.set_trace_callback(None)
    assert d.state.value == "withheld"
    assert ["event:delivery", "event:plan"] in tx and ["event:answer"] in tx
    assert not led.was_sent(d.relay_id) and rep.log == []


async def test_a_halt_that_wins_over_a_yes_leaves_no_sent_mark(tmp_path):
    """The sent mark is written in the yes's commit only when no halt withheld it: the halt is read in
    that same transaction, so one recorded while the plan was shown still means nothing was marked sent."""
    async with anyio.create_task_group() as tg:
        s, rep, gate, led, lines = mk(tmp_path, [], tg=tg)

        async def yes_but_halted(plan):
            led.halt("stop", by="peer:codex@beta")  # arrives while the plan is on screen
            return True

        s.shared.operator_approve = yes_but_halted
        d = await s.send("fake:a", "hello", want="none")
        tg.cancel_scope.cancel()
    assert d.state.value == "withheld" and "relay-halt" in (d.reason or "")
    assert not led.was_sent(d.relay_id) and rep.log == []
    answer = [e for e in led.events(delivery=d.key) if e.kind == "answer"]
    assert answer and answer[0].data.get("withheld")
