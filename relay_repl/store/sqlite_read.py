"""Opening an SQLite file only to read it, leaving every file exactly as it was.

Why a helper: `mode=ro` alone is not read-only on disk. For a database in WAL mode whose
last writer closed cleanly (no -wal, no -shm beside it), a `mode=ro` connection creates
both side files and, being read-only, cannot remove them again (measured with SQLite
3.40). relay's read-only commands (`why`, `log`, `verify`, `doctor`, discovery of the
clients' queue and state databases) must change nothing in RELAY_HOME or the clients' homes
(issue 16 case 8). So:

- no -wal beside the file: every committed page is in the main file; it is opened
  `immutable` (no locks, no side files). A writer that starts meanwhile writes to a new
  -wal, not to the main file, until a checkpoint; a read racing that checkpoint can fail
  ("malformed"), never change anything, and a re-run reads the settled file;
- a -wal beside it: a writer holds the database open (or died), its -shm is there too, and
  `mode=ro` reads the committed pages in the WAL through them without creating a file.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote  # what urllib.request.pathname2url is on POSIX, without importing http.client, ssl, email


def read_only_uri(path: Path | str) -> str:
    uri = f"file:{quote(str(path))}?mode=ro"
    if not os.path.lexists(f"{path}-wal"):
        uri += "&immutable=1"
    return uri


def connect_read_only(path: Path | str, timeout: float = 2.0, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection that can only read `path` and creates no file next to it."""
    return sqlite3.connect(read_only_uri(path), uri=True, timeout=timeout, isolation_level=None,
                           check_same_thread=check_same_thread)
