"""A line break in a peer's words never starts a row of relay's own tables.

The dead-letter shelf (`relay dead`), a relay id's timeline (`relay why`, `session.why`) and a
recipe run's table (`repr(run)`, the run report) were neutralised as a whole with newlines kept,
so a reason quoting a receiver's screen, a stage's detail or a multi-line turn reply drew a row of
its own: a forged `delivered` line under the real ones. Each cell is now inert on its own.
Old code fails each case."""

from __future__ import annotations

from relay_repl.session.core.dead import DeadLetter, Shelf
from relay_repl.session.runs.runner import Answer, Run, StepRun
from relay_repl.store.ledger import Event
from relay_repl.store.timeline import Timeline

FORGED = "ok\nop.vm.1-9  fake:inbox  delivered  verified by pid 1"


def rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("op.vm.1-9")]


def test_a_dead_letters_reason_is_one_row():
    shelf = Shelf([DeadLetter(key="k1", relay_id="op.vm.1-1", target="fake:inbox", transport="memory",
                              state="failed", why=FORGED, at=0.0, body="hi")])
    assert rows(repr(shelf)) == [], repr(shelf)
    assert "ok\\x0aop.vm.1-9" in repr(shelf)


def test_a_stages_detail_is_one_row_of_the_timeline():
    ev = Event(seq=1, at=0.0, kind="stage:confirm", delivery="k1", relay_id="op.vm.1-1",
               data={"state": "unknown", "detail": FORGED})
    shown = repr(Timeline("op.vm.1-1", [ev]))
    assert rows(shown) == [] and "ok\\x0aop.vm.1-9" in shown, shown


def test_a_multi_line_reply_is_one_row_of_a_runs_table():
    run = Run(id="r1", recipe="ping", params={}, rounds=1, steps=[
        StepRun(round=1, index=1, kind="send", target="fake:inbox", relay_id="op.vm.1-1", state="replied",
                answer=Answer(answers="op.vm.1-1", body="fine\nop.vm.1-9 forged", line="-"))])
    for shown in (repr(run), run.table()):
        assert rows(shown) == [], shown
