"""Following the ledger as other processes write it: new events and inbox rows, as they land.

Why a reader that reopens: a read-only ledger handle (`Ledger.read_only_at`) opens a ledger
with no -wal beside it as `immutable`, which never sees a later commit. So each batch is read
through a fresh read-only handle (well under a millisecond), only the rows after the last ones
seen (`seq > since`), and the follower sleeps on inotify (system/filewatch.py) until the
ledger or its -wal changes: no polling loop runs faster than the events. `idle` seconds with
no change re-read once anyway (a safety net for a change the watch could not see, e.g. a
ledger on a network file system), which costs one query.

Read-only throughout: `relay watch` and `relay log --follow` change nothing through it (a request
decided from `relay watch` is written by the ordinary decision's own session, session/core/watch_view.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from relay_repl.core.errors import LedgerError
from relay_repl.core.inbound import InboundMessage
from relay_repl.store.ledger import Event, Ledger

IDLE = 5.0
"""Seconds without any change after which the follower reads once anyway."""


class Batch(BaseModel):
    """What was written since the last batch: events and inbox messages, each oldest first."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    events: list[Event]
    inbox: list[InboundMessage]

    def __bool__(self) -> bool:
        return bool(self.events or self.inbox)


class LedgerFollower:
    """Reads what was added to the ledger at `path` since the last read; `follow()` yields it as it lands."""

    def __init__(self, path: Path | str, *, since_event: int = 0, since_inbox: int = 0) -> None:
        self.path = Path(path)
        self.since_event = since_event
        self.since_inbox = since_inbox

    @classmethod
    def from_tail(cls, path: Path | str, events: int = 0) -> tuple[LedgerFollower, Batch]:
        """A follower positioned after the newest rows, with the last `events` events (and the
        inbox messages since the first of them) as its first batch.

        Each position is the newest row of the read that gave the first batch, never a second
        look at the newest seq: a row committed between two such reads (another process writes
        meanwhile) had a seq past the batch and at or below the position, and was never shown."""
        led = Ledger.read_only_at(path)
        try:
            tail = list(reversed(led.events_before(None, events))) if events else []
            last_event = tail[-1].seq if tail else 0 if events else led.last_event_seq()
            first_at = tail[0].at if tail else None
            last_inbox = led.last_inbox_seq()
            inbox = [m for m in led.inbox(since=max(0, last_inbox - 200))
                     if m.seq <= last_inbox and first_at is not None and m.at >= first_at]
        finally:
            led.close()
        return cls(path, since_event=last_event, since_inbox=last_inbox), Batch(events=tail, inbox=inbox)

    def read_new(self) -> Batch:
        """The rows after the last ones read (none when the ledger does not exist yet)."""
        if not self.path.exists():
            return Batch(events=[], inbox=[])
        led = Ledger.read_only_at(self.path)
        try:
            events = led.events(since=self.since_event)
            inbox = led.inbox(since=self.since_inbox)
        finally:
            led.close()
        if events:
            self.since_event = events[-1].seq
        if inbox:
            self.since_inbox = inbox[-1].seq
        return Batch(events=events, inbox=inbox)

    async def follow(self, *, idle: float = IDLE) -> AsyncIterator[Batch]:
        """Yield each non-empty batch as the ledger changes, forever (cancel to stop)."""
        from relay_repl.system.filewatch import DirWatch

        names = [self.path.name, f"{self.path.name}-wal"]
        failures = 0
        async with DirWatch(self.path.parent, names) as watch:
            while True:
                try:
                    batch = self.read_new()
                    failures = 0
                except LedgerError:
                    failures += 1  # read while a checkpoint rewrote the file: read again (at the next change)
                    if failures > 20:
                        raise
                    await watch.changed(0.05)
                    continue
                if batch:
                    yield batch
                await watch.changed(idle)
