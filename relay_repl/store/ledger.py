"""The ledger: a durable record of ids, hops, halts, and everything that happened.

Why SQLite in WAL mode: several processes write it at once (the REPL, a
`relay send` one-liner, a Codex agent running `relay reply`), it must survive
a `kill -9` in the middle of a write with nothing lost or doubled, and an
operator must be able to ask "why" about any relay id long after the fact.

- `counters`  next `n` per sender address, so ids `<address>-<n>` never repeat.
- `relay_ids` every id sent or seen, with its hop; a second sighting of a seen
              id is a duplicate (seed section 9: log it, never act on it).
- `halts`     relay-halt in force stops everything until cleared by the operator.
- `events`    append-only log: plan shown, the answer, each stage's evidence, outcome.
- `inbox`     messages that reached the operator's own inbox, each with the
              relay id it answers (`re=`, when we sent that id) and its verdict.
- `forwards`  ids the operator forwarded: an id that reached the inbox may be
              forwarded once; arriving is not forwarding (seed section 9).
- `marks`     `unfinished_from`: the event from which a send may still lack its outcome,
              so the check before every plan reads the sends still open, not all history.
- `requests`  agents' requests to send and their current state (store/requests.py).

Each write is one transaction; WAL with synchronous=NORMAL loses nothing on a
process crash (only an OS crash can drop the last commits), which is the
failure this tool must survive.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from relay_repl.core.errors import LedgerError
from relay_repl.store.ledger_file import check_ledger_file
from relay_repl.store.sqlite_read import connect_read_only

if TYPE_CHECKING:  # the row values (pydantic) load on first use: `relay reply` builds none (issue 33)
    from relay_repl.core.inbound import InboundMessage, Verdict
    from relay_repl.core.inbound import InboundMessage as InboxMessage  # noqa: F401 - the old name, re-exported
    from relay_repl.store.ledger_values import Event as Event, Halt as Halt


def __getattr__(name: str) -> Any:
    """`Event`, `Halt` and `InboxMessage` (the name this module used before the value moved to core),
    imported from here as before, loaded on first use."""
    if name in ("Event", "Halt"):
        from relay_repl.store import ledger_values

        return getattr(ledger_values, name)
    if name == "InboxMessage":
        from relay_repl.core.inbound import InboundMessage

        return InboundMessage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (
    sender TEXT PRIMARY KEY,
    n      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS relay_ids (
    relay_id  TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('sent', 'seen')),
    hop       INTEGER NOT NULL,
    peer      TEXT,
    at        REAL NOT NULL,
    count     INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (relay_id, direction)
);
CREATE TABLE IF NOT EXISTS halts (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL NOT NULL,
    reason  TEXT NOT NULL,
    by      TEXT NOT NULL,
    cleared REAL
);
CREATE TABLE IF NOT EXISTS events (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    at       REAL NOT NULL,
    kind     TEXT NOT NULL,
    delivery TEXT,
    relay_id TEXT,
    data     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_relay ON events(relay_id);
CREATE INDEX IF NOT EXISTS events_delivery ON events(delivery);
CREATE INDEX IF NOT EXISTS events_sends ON events(json_extract(data, '$.spec'), json_extract(data, '$.body'))
    WHERE kind = 'delivery';
CREATE TABLE IF NOT EXISTS inbox (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    at       REAL NOT NULL,
    relay_id TEXT,
    peer     TEXT,
    line     TEXT NOT NULL,
    origin   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS forwards (
    relay_id TEXT PRIMARY KEY,
    at       REAL NOT NULL,
    target   TEXT
);
CREATE TABLE IF NOT EXISTS marks (
    name TEXT PRIMARY KEY,
    seq  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    id       TEXT PRIMARY KEY,
    asker    TEXT NOT NULL,
    state    TEXT NOT NULL,
    created  REAL NOT NULL,
    expires  REAL NOT NULL,
    data     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_state ON requests(state);
"""

MARK_STEP = 64
"""`unfinished_from` moves once it would skip this many events (Ledger.unfinished_deliveries)."""

INBOX_COLUMNS = {"answers": "TEXT", "verdict": "TEXT", "hop": "INTEGER"}
"""Columns added to `inbox` after its first release (added in place to older ledgers)."""



def _create(path: Path) -> None:
    """Make a new ledger atomically: build it beside, then link it into place.

    So no process ever sees a half-made (0-byte) ledger, and the 0-byte check above
    cannot fire on two processes starting at once. If another process linked its
    ledger first, that one is used.

    The schema goes in as one transaction, in WAL mode from the start: in autocommit each CREATE
    was a transaction of its own, each synced to disk, and the later switch to WAL another; a new
    ledger cost 80-170 ms while other processes kept this machine's disk busy, 25-55 ms now, and
    9 ms vs 4-5 ms on a quiet disk (bench/ledger.py). synchronous=NORMAL as every later connection
    has it: the close checkpoints and syncs the file before it is linked into place. Every fresh
    RELAY_HOME pays it once; a test that builds a ledger per call pays it a thousand times."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        con = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")  # as every later connection: the close syncs it
            con.executescript(f"BEGIN;\n{SCHEMA}\nCOMMIT;")
        finally:
            con.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    except (OSError, sqlite3.Error) as exc:
        raise LedgerError(f"cannot create the ledger at {path}: {exc}; set RELAY_HOME to a writable directory") from exc
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass


def _empty_in_memory() -> sqlite3.Connection:
    """A new ledger's schema in an SQLite database in memory (no file): the read-only view of
    a ledger not made yet, and `Ledger.in_memory`."""
    con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    con.executescript(SCHEMA)
    for col, typ in INBOX_COLUMNS.items():
        con.execute(f"ALTER TABLE inbox ADD COLUMN {col} {typ}")
    return con


def _in_memory_copy(path: Path) -> sqlite3.Connection:
    """An older ledger (before the inbox's later columns), copied into memory and migrated
    there, so the reading code sees one schema and the file is left as it is."""
    src = connect_read_only(path, timeout=10.0)
    try:
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        src.backup(con)
    finally:
        src.close()
    con.executescript(SCHEMA)
    have = {r[1] for r in con.execute("PRAGMA table_info(inbox)")}
    for col, typ in INBOX_COLUMNS.items():
        if col not in have:
            con.execute(f"ALTER TABLE inbox ADD COLUMN {col} {typ}")
    con.execute("PRAGMA query_only=ON")
    return con


class Ledger:
    """Thread-safe handle on the ledger file (one connection, one lock)."""

    read_only = False
    """True for `Ledger.read_only_at`/`read_only_default`: every write raises LedgerError."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise LedgerError(f"cannot create the ledger's directory {self.path.parent}: {exc.strerror}; "
                             "set RELAY_HOME to a writable directory") from exc
        if os.path.lexists(self.path):
            check_ledger_file(self.path)
        else:
            _create(self.path)
        try:
            self._con = sqlite3.connect(
                str(self.path), timeout=10.0, isolation_level=None, check_same_thread=False
            )
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA synchronous=NORMAL")
            self._con.execute("PRAGMA busy_timeout=10000")
            self._con.executescript(SCHEMA)
            have = {r[1] for r in self._con.execute("PRAGMA table_info(inbox)")}
            for col, typ in INBOX_COLUMNS.items():
                if col not in have:
                    self._con.execute(f"ALTER TABLE inbox ADD COLUMN {col} {typ}")
        except sqlite3.Error as exc:
            if "not a database" in str(exc):
                raise LedgerError(f"the ledger at {self.path} is not an SQLite database; nothing was changed: restore "
                                 f"it, or move it aside (mv {self.path} {self.path}.bad) to start a new ledger") from exc
            raise LedgerError(
                f"cannot open the ledger at {self.path}: {exc}; check the file's permissions or set RELAY_HOME"
            ) from exc
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> Ledger:
        from relay_repl.store.paths import ledger_path

        return cls(ledger_path())

    @classmethod
    def read_only_at(cls, path: Path | str) -> Ledger:
        """The ledger for a command that only reads it (`why`, `log`, `verify`, `debug --look`).

        Creates, changes and deletes no file (issue 16 case 8): an existing ledger is opened
        through `connect_read_only` (no schema, no WAL switch, no side files); a missing one
        is an empty ledger in memory, never a file (before, `Ledger(":memory:")` made a file
        of that name in the working directory). Any write raises LedgerError."""
        self = cls.__new__(cls)
        self.path = Path(path)
        self.read_only = True
        self._lock = threading.Lock()
        try:
            if os.path.lexists(self.path):
                check_ledger_file(self.path, write=False)
                self._con = connect_read_only(self.path, timeout=10.0, check_same_thread=False)
                self._con.execute("SELECT count(*) FROM sqlite_master").fetchone()
                have = {r[1] for r in self._con.execute("PRAGMA table_info(inbox)")}
                if have and not set(INBOX_COLUMNS) <= have:  # an older ledger: read it as if migrated
                    self._con.close()
                    self._con = _in_memory_copy(self.path)
            else:
                self._con = _empty_in_memory()
                self._con.execute("PRAGMA query_only=ON")
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot read the ledger at {self.path}: {exc}; nothing was changed") from exc
        return self

    @classmethod
    def in_memory(cls) -> Ledger:
        """A writable, empty ledger in this process's memory, gone on close: the ledger double
        `relay_repl.testing` ships. The same schema and the same SQL as a file ledger, so a
        plugin's fast test records and reads deliveries exactly as the product does, with no
        file and no RELAY_HOME; what it cannot show is another process's writes (a file does).
        The product never opens one."""
        self = cls.__new__(cls)
        self.path = Path(":memory:")
        self._lock = threading.Lock()
        self._con = _empty_in_memory()
        return self

    @classmethod
    def read_only_default(cls) -> Ledger:
        from relay_repl.store.paths import ledger_path

        return cls.read_only_at(ledger_path())

    def close(self) -> None:
        with self._lock:
            self._con.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: the write lock is taken up front, so two
        processes bumping one counter serialize instead of both reading n. Inside
        `one_commit` (this thread's), the writes join that transaction instead."""
        if self._batching == threading.get_ident():
            yield self._con
            return
        with self._lock:
            try:
                self._con.execute("BEGIN IMMEDIATE")
                try:
                    yield self._con
                except BaseException:
                    self._con.execute("ROLLBACK")
                    raise
                self._con.execute("COMMIT")
            except sqlite3.Error as exc:
                raise LedgerError(f"ledger write failed at {self.path}: {exc}") from exc

    _batching: int | None = None
    """The thread inside `one_commit`, if any."""

    @contextmanager
    def one_commit(self) -> Iterator[None]:
        """Every write (and read) this thread makes inside is one transaction, committed at the end,
        or none of it when the block raises. Why: each commit costs relay CPU (the pages it changed
        written to the WAL), and an arriving message was four of them (issue 33). Only for writes
        that stand or fall together, with nothing reported before the block ends: a crash keeps all
        of them or none (an arriving message's seen mark and the message itself: before, a crash
        between the two lost the message, its re-delivery then dropped as a duplicate). The write lock
        is held throughout, so keep slow work (reading /proc, the receiver's files) outside."""
        if self._batching == threading.get_ident():
            yield
            return
        with self._tx() as _con:
            self._batching = threading.get_ident()
            try:
                yield
            finally:
                self._batching = None

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._batching == threading.get_ident():
            try:
                return self._con.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise LedgerError(f"ledger read failed at {self.path}: {exc}") from exc
        with self._lock:
            try:
                return self._con.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise LedgerError(f"ledger read failed at {self.path}: {exc}") from exc

    # -- ids -----------------------------------------------------------------
    def next_id(self, sender: str) -> str:
        """A fresh `<sender>-<n>`, unique for this sender across every process
        sharing the ledger."""
        from relay_repl.store.ledger_ids import take_id  # its one statement (the plain pre-plan takes it too)

        with self._tx() as con:
            return take_id(con, sender)

    def peek_next_id(self, sender: str) -> str:
        """The id `next_id` would hand out now (for scripting a peer's answer in tests)."""
        rows = self._query("SELECT n FROM counters WHERE sender=?", (sender,))
        return f"{sender}-{(rows[0][0] if rows else 0) + 1}"

    def record_sent(self, relay_id: str, hop: int, peer: str | None = None) -> None:
        with self._tx() as con:
            con.execute(
                "INSERT INTO relay_ids(relay_id, direction, hop, peer, at) VALUES (?, 'sent', ?, ?, ?) "
                "ON CONFLICT(relay_id, direction) DO UPDATE SET count = count + 1",
                (relay_id, hop, peer, time.time()),
            )

    def mark_seen(self, relay_id: str, hop: int, peer: str | None = None) -> bool:
        """Record a sighting; True the first time, False for a duplicate."""
        with self._tx() as con:
            row = con.execute(
                "INSERT INTO relay_ids(relay_id, direction, hop, peer, at) VALUES (?, 'seen', ?, ?, ?) "
                "ON CONFLICT(relay_id, direction) DO UPDATE SET count = count + 1 RETURNING count",
                (relay_id, hop, peer, time.time()),
            ).fetchone()
        return row[0] == 1

    def was_sent(self, relay_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM relay_ids WHERE relay_id=? AND direction='sent'", (relay_id,)))

    def sent_to(self, relay_id: str) -> str | None:
        """Who an id we sent was addressed to (the target's spec; for a forward, where it went)."""
        rows = self._query("SELECT peer FROM relay_ids WHERE relay_id=? AND direction='sent'", (relay_id,))
        return rows[0][0] if rows else None

    def sent_hop(self, relay_id: str) -> int | None:
        """The hop an id we sent carried, or None if we never sent it."""
        rows = self._query("SELECT hop FROM relay_ids WHERE relay_id=? AND direction='sent'", (relay_id,))
        return rows[0][0] if rows else None

    def last_hop_to(self, peer: str) -> int | None:
        """The hop of the last relay message sent to `peer` (its exchange with the operator), or None."""
        rows = self._query("SELECT hop FROM relay_ids WHERE direction = 'sent' AND peer = ? ORDER BY at DESC LIMIT 1",
                           (peer,))
        return int(str(rows[0][0])) if rows else None

    def sightings(self, relay_id: str, direction: Literal["sent", "seen"] = "seen") -> int:
        rows = self._query("SELECT count FROM relay_ids WHERE relay_id=? AND direction=?", (relay_id, direction))
        return rows[0][0] if rows else 0

    # -- halts ---------------------------------------------------------------
    def halt(self, reason: str, by: str) -> Halt:
        from relay_repl.store.ledger_values import Halt

        with self._tx() as con:
            now = time.time()
            cur = con.execute("INSERT INTO halts(at, reason, by) VALUES (?, ?, ?)", (now, reason, by))
            seq = cur.lastrowid
        self.event("halt", data={"reason": reason, "by": by})
        for wake in list(self._halt_listeners or ()):
            wake()
        return Halt(seq=int(seq or 0), at=now, reason=reason, by=by)

    _halt_listeners: list[Callable[[], None]] | None = None

    def on_halt(self, wake: Callable[[], None]) -> None:
        """Call `wake()` right after each halt this process records here (in the thread that records
        it). Why: the waits for answers sleep until an answer comes (issue 33) and must still stop at
        once on a halt; another process's halt reaches them at their next read of `active_halt`."""
        if self._halt_listeners is None:
            self._halt_listeners = []
        if wake not in self._halt_listeners:
            self._halt_listeners.append(wake)

    def halt_if_carried(self, text: str | None, *, where: str, by: str) -> Halt | None:
        """THE check for `relay-halt` in a message (seed section 9): every inbound message kept
        (inbox line, MCP relay_reply, turn reply), a reply a recipe or notebook reads, passes here,
        so a halt anywhere is recorded once and every wait and send sees it through `active_halt`."""
        from relay_repl.core.envelope import contains_halt

        if not text or not contains_halt(text):
            return None
        return self.halt(f"relay-halt received in {where}", by=by)

    def active_halt(self) -> Halt | None:
        rows = self._query("SELECT seq, at, reason, by FROM halts WHERE cleared IS NULL ORDER BY seq DESC LIMIT 1")
        if not rows:
            return None
        from relay_repl.store.ledger_values import Halt

        return Halt(seq=rows[0][0], at=rows[0][1], reason=rows[0][2], by=rows[0][3])

    def halts_in_force(self) -> list[Halt]:
        """Every halt not cleared, oldest first (`relay halts`)."""
        from relay_repl.store.ledger_values import Halt

        rows = self._query("SELECT seq, at, reason, by FROM halts WHERE cleared IS NULL ORDER BY seq")
        return [Halt(seq=r[0], at=r[1], reason=r[2], by=r[3]) for r in rows]

    def clear_halts(self, by: str = "operator", *, seqs: list[int] | None = None) -> int:
        """Clear every halt in force, or only those numbered `seqs` (the ones a plan showed: a halt
        that arrived after it was shown is not cleared by a yes to it)."""
        with self._tx() as con:
            if seqs is None:
                n = con.execute("UPDATE halts SET cleared=? WHERE cleared IS NULL", (time.time(),)).rowcount
            else:
                marks = ",".join("?" * len(seqs)) or "NULL"
                n = con.execute(f"UPDATE halts SET cleared=? WHERE cleared IS NULL AND seq IN ({marks})",
                                (time.time(), *seqs)).rowcount
        self.event("halt-cleared", data={"by": by, "count": n, **({"seqs": seqs} if seqs is not None else {})})
        return n

    # -- events --------------------------------------------------------------
    def event(
        self,
        kind: str,
        *,
        delivery: str | None = None,
        relay_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> int:
        """Append one event; returns its sequence number. Never updates in place."""
        payload = json.dumps(data or {}, ensure_ascii=False, default=str, separators=(",", ":"))
        with self._tx() as con:
            cur = con.execute(
                "INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, ?, ?, ?, ?)",
                (time.time(), kind, delivery, relay_id, payload),
            )
            seq = int(cur.lastrowid or 0)
        if kind == "delivery" and delivery and data and data.get("pid") == os.getpid():
            self.__dict__.setdefault("_started_here", set()).add(delivery)
        return seq

    @property
    def started_here(self) -> set[str] | frozenset[str]:
        """Delivery keys this process started (its `delivery` event names this pid), through this
        ledger: alive as long as the process asking is, so the sweep of dead processes' sends skips
        them without reading their events (ask-all read every sibling's events before each plan)."""
        return self.__dict__.get("_started_here", frozenset())

    def events(
        self,
        *,
        delivery: str | None = None,
        relay_id: str | None = None,
        kind: str | None = None,
        since: int = 0,
        limit: int | None = None,
    ) -> list[Event]:
        where: list[str] = ["seq > ?"]
        args: list[int | str] = [since]
        for col, val in (("delivery", delivery), ("relay_id", relay_id), ("kind", kind)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        from relay_repl.store.ledger_values import Event

        sql = f"SELECT seq, at, kind, delivery, relay_id, data FROM events WHERE {' AND '.join(where)} ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [
            Event(seq=r[0], at=r[1], kind=r[2], delivery=r[3], relay_id=r[4], data=json.loads(r[5]))
            for r in self._query(sql, tuple(args))
        ]

    def events_before(self, seq: int | None, n: int) -> list[Event]:
        """The `n` newest events before `seq` (before none: the newest), newest first (one indexed read,
        where `events()[-n:]` reads the whole table)."""
        from relay_repl.store.ledger_values import Event

        rows = self._query("SELECT seq, at, kind, delivery, relay_id, data FROM events WHERE seq < ? "
                           "ORDER BY seq DESC LIMIT ?", (seq if seq is not None else 2**62, int(n)))
        return [Event(seq=r[0], at=r[1], kind=r[2], delivery=r[3], relay_id=r[4], data=json.loads(r[5])) for r in rows]

    def last_event_seq(self) -> int:
        return int(self._query("SELECT COALESCE(MAX(seq), 0) FROM events")[0][0])

    def last_inbox_seq(self) -> int:
        return int(self._query("SELECT COALESCE(MAX(seq), 0) FROM inbox")[0][0])

    def inbox_links(self, since: int) -> list[tuple[int, str | None]]:
        """(seq, the relay id it answers) of each inbox message after `since`, oldest first: what the
        waits' shared look reads (session/core/answers.py), without the messages themselves."""
        return [(int(r[0]), r[1]) for r in self._query("SELECT seq, answers FROM inbox WHERE seq > ? ORDER BY seq",
                                                       (since,))]

    # -- inbox ---------------------------------------------------------------
    def add_inbox(self, line: str, *, origin: dict[str, Any], relay_id: str | None, peer: str | None,
                  answers: str | None = None, verdict: Verdict | None = None,
                  hop: int | None = None) -> InboundMessage:
        from relay_repl.core.inbound import InboundMessage

        now = time.time()
        with self._tx() as con:
            cur = con.execute(
                "INSERT INTO inbox(at, relay_id, peer, line, origin, answers, verdict, hop) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (now, relay_id, peer, line, json.dumps(origin, default=str), answers,
                 verdict.model_dump_json() if verdict else None, hop),
            )
            seq = int(cur.lastrowid or 0)
        self.halt_if_carried(line, where=f"inbox #{seq} from {peer or 'an unknown sender'}", by=str(peer))
        return InboundMessage(seq=seq, at=now, relay_id=relay_id, peer=peer, line=line, origin=origin,
                              answers=answers, verdict=verdict, hop=hop)

    def inbox(self, since: int = 0, *, answers: str | None = None) -> list[InboundMessage]:
        """Inbox messages after `since`, oldest first; only those answering `answers` if given."""
        from relay_repl.core.inbound import InboundMessage, Verdict

        sql = "SELECT seq, at, relay_id, peer, line, origin, answers, verdict, hop FROM inbox WHERE seq > ?"
        args: tuple[Any, ...] = (since,)
        if answers is not None:
            sql += " AND answers = ?"
            args += (answers,)
        rows = self._query(sql + " ORDER BY seq", args)
        return [
            InboundMessage(seq=r[0], at=r[1], relay_id=r[2], peer=r[3], line=r[4], origin=json.loads(r[5]),
                           answers=r[6], verdict=Verdict.model_validate_json(r[7]) if r[7] else None, hop=r[8])
            for r in rows
        ]

    # -- forwards --------------------------------------------------------------
    # -- sends without an outcome (see session.unfinished) -------------------------
    def unfinished_deliveries(self) -> list[str]:
        """Delivery keys with an approved answer or a stage, and no outcome event, oldest first.

        Read from the `unfinished_from` mark on, then the mark is moved up to the first event of the
        oldest send still open (or past the last event when none is). Why: this runs before every
        plan, and read the whole events table each time: ~10 ms a send at 9,000 events, 93 ms at
        90,000 (bench/ledger.py --history). The mark is safe because an outcome is never taken back
        and events are only appended: a send with an event before the mark had its outcome when the
        mark was set. It only rises (max), so two processes moving it at once keep the higher one,
        each computed from a snapshot in which it held. It moves once it would skip MARK_STEP events:
        moving it was a commit in every plan (issue 33), and reading that many more costs less."""
        since = next(iter(self._query("SELECT seq FROM marks WHERE name = 'unfinished_from'")), (0,))[0]
        rows = self._query(  # one statement, so one snapshot: the open sends and the last event agree
            "SELECT e.seq, e.delivery FROM events e WHERE e.seq >= ? AND +e.delivery IS NOT NULL AND "
            "(e.kind LIKE 'stage:%' OR (e.kind = 'answer' AND json_extract(e.data, '$.approved') = 1)) AND "
            "NOT EXISTS (SELECT 1 FROM events o WHERE o.delivery = e.delivery AND o.kind = 'outcome') "
            "UNION ALL SELECT COALESCE(MAX(seq), 0) + 1, NULL FROM events ORDER BY 1",
            (since,),
        )
        keys = list(dict.fromkeys(r[1] for r in rows if r[1] is not None))
        mark = rows[0][0]  # the oldest open send's first event, else one past the last event
        if mark >= since + MARK_STEP and not self.read_only:
            self._raise_mark("unfinished_from", mark)
        return keys

    def _raise_mark(self, name: str, seq: int) -> None:
        """Set mark `name` to `seq` unless it is already higher (another process's newer snapshot)."""
        with self._tx() as con:
            con.execute("INSERT INTO marks(name, seq) VALUES (?, ?) "
                        "ON CONFLICT(name) DO UPDATE SET seq = excluded.seq WHERE excluded.seq > seq", (name, seq))

    def add_outcome_if_missing(self, delivery: str, relay_id: str | None, data: dict[str, Any]) -> bool:
        """Append an outcome for `delivery` unless one exists (one transaction: two starts
        sweeping at once record it once). True if this call recorded it."""
        payload = json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":"))
        with self._tx() as con:
            if con.execute("SELECT 1 FROM events WHERE delivery=? AND kind='outcome'", (delivery,)).fetchone():
                return False
            con.execute("INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, 'outcome', ?, ?, ?)",
                        (time.time(), delivery, relay_id, payload))
        return True

    def deliveries_of(self, spec: str, body: str) -> list[Event]:
        """The `delivery` events of sends of exactly `body` to `spec`, oldest first."""
        from relay_repl.store.ledger_values import Event

        rows = self._query(  # the index events_sends, as written: one lookup, not a scan of all events
            "SELECT seq, at, kind, delivery, relay_id, data FROM events WHERE kind = 'delivery' AND "
            "json_extract(data, '$.spec') = ? AND json_extract(data, '$.body') = ? ORDER BY seq",
            (spec, body),
        )
        return [Event(seq=r[0], at=r[1], kind=r[2], delivery=r[3], relay_id=r[4], data=json.loads(r[5])) for r in rows]

    def was_forwarded(self, relay_id: str) -> bool:
        """Whether the operator already forwarded this id (read-only; `mark_forwarded` records it)."""
        return bool(self._query("SELECT 1 FROM forwards WHERE relay_id=?", (relay_id,)))

    def mark_forwarded(self, relay_id: str, target: str | None = None) -> bool:
        """Record that the operator forwarded this id; True the first time, False for a repeat."""
        with self._tx() as con:
            row = con.execute(
                "INSERT INTO forwards(relay_id, at, target) VALUES (?, ?, ?) ON CONFLICT(relay_id) DO NOTHING "
                "RETURNING relay_id",
                (relay_id, time.time(), target),
            ).fetchone()
        return row is not None

    def __repr__(self) -> str:
        return f"<Ledger {self.path}>"
