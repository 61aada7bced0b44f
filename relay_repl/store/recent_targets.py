"""The targets this machine's operator sent to lately, read from the ledger (newest first).

Why: shell completion (`relay completion`) offers target names at Tab, and discovering the live
sessions there (a `claude agents --json`, the Codex daemon) would cost a second per Tab and change
what a read-only Tab may not. The ledger already records every send's target spec; reading it
read-only (store/sqlite_read: no side file left) costs a few milliseconds and discovers nothing.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from relay_repl.store.sqlite_read import connect_read_only


def recent_targets(ledger: Path, limit: int = 500) -> list[str]:
    """Distinct target specs of the newest `limit` sends, newest first; [] without a readable ledger."""
    if not os.path.isfile(ledger):
        return []
    try:
        con = connect_read_only(ledger)
        try:
            rows = con.execute("SELECT json_extract(data, '$.spec') FROM events WHERE kind = 'delivery' "
                               "ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []
    return list(dict.fromkeys(r[0] for r in rows if isinstance(r[0], str) and r[0] and r[0].isprintable()))
