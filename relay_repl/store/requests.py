"""Agents' requests to send, kept durably in the operator's ledger (the `requests` table).

Why a table beside the events: a request has a current state the operator's relay moves
(held -> approved -> delivered, or denied/expired/halted) and the asker reads by id, and the
REPL, `relay requests` and `relay watch` list the held ones; reading that back out of the
append-only events would scan them all. Each change is also appended as an event
(`request`, relay id = R), so `relay why R` tells the whole story.

The table is in the ledger's own file and SCHEMA (several processes share it under WAL); a
read-only ledger of a file from before it lists nothing.
A request id is its primary key: a replayed id is refused by `add` (the inbox logs it).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from relay_repl.core.errors import LedgerError
from relay_repl.core.request import Request
from relay_repl.store.ledger import Ledger

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

class RequestStore:
    """The ledger's requests: add (once per id), read, move to a new state, list the held ones."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def tell_from(self, task_group: TaskGroup) -> None:
        """Where a store that tells hosts of state changes runs that (session/remote/request_mirror.py
        MirroredStore, from the session's task group); this table tells nobody."""

    def _rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return self.ledger._query(sql, args)
        except LedgerError as exc:
            if "no such table" in str(exc):  # a read-only ledger from before requests: none were kept
                return []
            raise

    def add(self, req: Request) -> bool:
        """Keep a new request; False (nothing changed) when its id is already kept: a replay."""
        try:
            with self.ledger._tx() as con:
                con.execute("INSERT INTO requests(id, asker, state, created, expires, data) VALUES (?, ?, ?, ?, ?, ?)",
                            (req.id, req.asker, req.state, req.created, req.expires, req.model_dump_json()))
        except LedgerError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                return False
            raise
        self.ledger.event("request", relay_id=req.id, data={"state": req.state, "asker": req.asker, "to": req.to,
                                                            "want": req.want, "hop": req.hop, "flags": list(req.flags),
                                                            "verdict": req.verdict, "body": req.body,
                                                            "expires": req.expires})
        return True

    def get(self, request_id: str) -> Request | None:
        rows = self._rows("SELECT data FROM requests WHERE id = ?", (request_id,))
        return Request.model_validate_json(str(rows[0][0])) if rows else None

    def save(self, req: Request, *, expect: str | None = None) -> bool:
        """Write `req` over the kept one (a state change, also appended as an event). With `expect`,
        only while the kept state is still `expect` (two deciders at once: one wins); False if not."""
        with self.ledger._tx() as con:
            sql, args = "UPDATE requests SET state = ?, data = ? WHERE id = ?", [req.state, req.model_dump_json(), req.id]
            if expect is not None:
                sql += " AND state = ?"
                args.append(expect)
            changed = con.execute(sql, tuple(args)).rowcount
        if changed:
            self.ledger.event("request", relay_id=req.id, data={"state": req.state, "why": req.why,
                                                                "delivery_id": req.delivery_id,
                                                                "delivery_state": req.delivery_state,
                                                                "answer_id": req.answer_id,
                                                                "answer_state": req.answer_state})
        return bool(changed)

    def held(self) -> list[Request]:
        """Every request still held (expired ones included until recorded), oldest first."""
        rows = self._rows("SELECT data FROM requests WHERE state = 'held' ORDER BY created, id")
        return [Request.model_validate_json(str(r[0])) for r in rows]

    def all(self, limit: int = 200) -> list[Request]:
        """The latest `limit` requests, oldest first (for `relay requests --all`)."""
        rows = self._rows("SELECT data FROM requests ORDER BY created DESC, id DESC LIMIT ?", (limit,))
        return [Request.model_validate_json(str(r[0])) for r in reversed(rows)]


def held_requests(ledger: Ledger) -> list[Request]:
    """The held requests in `ledger` (what `relay watch` and `relay requests` show)."""
    return RequestStore(ledger).held()
