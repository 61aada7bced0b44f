"""The relay id counter's one statement, over a bare sqlite3 connection (standard library only).

Why apart from store/ledger.py: `relay send`'s plain pre-plan (frontends/send_plain.py, issue 40)
takes the id it shows in the plan before pydantic or the `Ledger` class is loaded, and the id it
shows must be the one the send then carries. `Ledger.next_id` calls `take_id` too, so there is
one way an id is taken: `INSERT ... RETURNING` on `counters` in one IMMEDIATE transaction, unique
for the sender across every process sharing the ledger.
"""

from __future__ import annotations

import sqlite3

TAKE = ("INSERT INTO counters(sender, n) VALUES (?, 1) "
        "ON CONFLICT(sender) DO UPDATE SET n = n + 1 RETURNING n")


def take_id(con: sqlite3.Connection, sender: str) -> str:
    """A fresh `<sender>-<n>` through `con`, inside the caller's transaction."""
    (n,) = con.execute(TAKE, (sender,)).fetchone()
    return f"{sender}-{n}"


def take_id_at(path: str, sender: str, timeout: float = 10.0) -> str:
    """`take_id` on the ledger file at `path` in a transaction of its own (the connection closed after).

    Raises sqlite3.Error when the file is not a ledger with a counters table: the caller then lets
    the `Ledger` open (create, migrate or refuse) it."""
    from urllib.parse import quote  # as store/sqlite_read.py spells a path in a URI

    # mode=rw: never creates the file (a missing ledger is the `Ledger`'s to create)
    con = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=timeout, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            rid = take_id(con, sender)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        return rid
    finally:
        con.close()
