"""The screen log the `relay watch` tests read (tests/support/watching.py): a line the test saw on the
screen before it stopped looking is seen by the log too, and an event it never saw is reported with
the captures around it. Driven by a pane double whose screen the test sets, so each step is exact."""

from __future__ import annotations

import time

from relay_repl.store.ledger_values import Event
from relay_repl.system.polling import poll_until_sync
from tests.support.watching import ScreenLog

HEAD = "DELIVERIES\nINBOX\n  (no messages)\nEVENTS (newest last)"


class Pane:
    """A pane whose screen is whatever the test last set."""

    def __init__(self) -> None:
        self.screen = HEAD

    def show(self, *lines: str) -> None:
        self.screen = "\n".join([HEAD, *(f"  {x}" for x in lines)])

    def capture_pane(self) -> list[str]:
        return self.screen.splitlines()


def _event(seq: int, at: float, kind: str = "stage:typed") -> Event:
    return Event(seq=seq, at=at, kind=kind, delivery="d", relay_id="op-1", data={})


def test_the_last_line_the_test_saw_before_leaving_the_block_is_seen_by_the_log():
    """The live test waits (in its own thread) for the run's last event on the screen, then leaves the
    block: the log's thread, between two captures then, had not seen it, and reported it 'never shown'
    (a fresh CI run failed so on `event #899 reply beta-26`)."""
    pane = Pane()
    pane.show("#1 12:00:00.000 plan op-1 plan shown")
    first = time.time()
    with ScreenLog(pane, interval=30.0) as log:  # one capture, then asleep until the block ends
        assert poll_until_sync(lambda: log.captures >= 1 or None, timeout=5, interval=0.01)
        pane.show("#1 12:00:00.000 plan op-1 plan shown", "#2 12:00:00.100 reply beta-26 [relay/1 ...")
        shown_at = time.time()  # the test's own capture sees #2 here, and leaves
    events = [_event(1, first), _event(2, shown_at, "reply")]
    assert log.late(events, [], bound=1.0) == []
    assert shown_at <= log.events[2] and log.frames[-1].rows == 2


def test_an_event_never_shown_is_reported_with_the_captures_around_it():
    pane = Pane()
    pane.show(*(f"#{n} 12:00:00.000 stage:typed op-1 typed" for n in range(1, 4)))
    with ScreenLog(pane, interval=30.0) as log:
        assert poll_until_sync(lambda: log.captures >= 1 or None, timeout=5, interval=0.01)
        pane.show(*(f"#{n} 12:00:00.000 stage:typed op-1 typed" for n in range(5, 8)))  # #4 scrolled off unseen
        time.sleep(0.05)  # the two captures well apart: the events are written between them
    first, last = log.frames
    mid = (first.at + last.at) / 2
    events = [_event(n, mid + (n - 4) / 1000) for n in range(1, 8)]
    late = log.late(events, [], bound=1.0)
    assert len(late) == 1 and late[0].startswith("event #4 stage:typed op-1: never shown; written ")
    assert "#3 stage:typed -0.001s" in late[0] and "#5 stage:typed +0.001s" in late[0]
    assert "#1..#3, 3 event rows" in late[0] and "#5..#7, 3 event rows" in late[0], late[0]
