"""The ledger follower behind `relay watch` and `relay log --follow` (session/core/follow.py), over a
real ledger file that another connection writes while the follower reads: every row is handed over
once, however the other writer's commits fall between the follower's reads."""

from __future__ import annotations

from relay_repl.session.core.follow import LedgerFollower
from relay_repl.store.ledger import Ledger


def test_rows_committed_while_the_first_batch_is_read_are_the_next_batch(tmp_path, monkeypatch):
    """Before, the follower's position was a second look at the newest seq, taken after the tail: an
    event (or inbox message) another process committed between the two reads was past the first batch
    and at the position, so never handed over (`relay watch` never showed it)."""
    path = tmp_path / "ledger.sqlite"
    mine = Ledger(path)
    for i in range(3):
        mine.event("noise", data={"i": i})
    mine.add_inbox("one", origin={}, relay_id=None, peer=None)
    other = Ledger(path)  # another process's handle: a Codex agent's `relay reply`, say
    real_before, real_inbox = Ledger.events_before, Ledger.inbox
    wrote: list[str] = []

    def events_before(self, seq, n):
        got = real_before(self, seq, n)
        if self.read_only and "event" not in wrote:  # the other writer commits right after the tail is read
            wrote.append("event")
            other.event("reply", relay_id="beta-26", data={"line": "an answer"})
        return got

    def inbox(self, since=0, **kw):
        got = real_inbox(self, since, **kw)
        if self.read_only and "inbox" not in wrote:
            wrote.append("inbox")
            other.add_inbox("two", origin={}, relay_id=None, peer=None)
        return got

    monkeypatch.setattr(Ledger, "events_before", events_before)
    monkeypatch.setattr(Ledger, "inbox", inbox)
    follower, first = LedgerFollower.from_tail(path, 10)
    monkeypatch.undo()
    assert wrote == ["event", "inbox"]
    assert [e.kind for e in first.events] == ["noise"] * 3 and [m.line for m in first.inbox] == ["one"]
    batch = follower.read_new()
    assert [(e.kind, e.relay_id) for e in batch.events] == [("reply", "beta-26")]
    assert [m.line for m in batch.inbox] == ["two"]
    assert not follower.read_new()


def test_an_empty_ledger_first_written_while_the_tail_is_read(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    mine = Ledger(path)
    real_before = Ledger.events_before

    def events_before(self, seq, n):
        got = real_before(self, seq, n)
        if self.read_only:
            mine.event("plan", relay_id="op-1", data={})
        return got

    monkeypatch.setattr(Ledger, "events_before", events_before)
    follower, first = LedgerFollower.from_tail(path, 10)
    monkeypatch.undo()
    assert not first
    assert [e.relay_id for e in follower.read_new().events] == ["op-1"]


def test_with_no_tail_the_follower_starts_after_the_newest_row(tmp_path):
    path = tmp_path / "ledger.sqlite"
    mine = Ledger(path)
    mine.event("plan", relay_id="op-1", data={})
    follower, first = LedgerFollower.from_tail(path, 0)
    assert not first and not follower.read_new()
    mine.event("answer", relay_id="op-1", data={"approved": True})
    assert [e.kind for e in follower.read_new().events] == ["answer"]
