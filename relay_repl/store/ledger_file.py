"""The one check of an existing ledger file, light enough for the REPL to run before its first prompt.

Kept apart from the ledger (which imports sqlite and pydantic) so `relay` can refuse a bad
ledger with one line before the prompt draws, instead of failing inside the running REPL.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from relay_repl.core.errors import LedgerError


def check_ledger_file(path: Path, write: bool = True) -> None:
    """Refuse a ledger file that sqlite would silently treat as new or that cannot be used.

    sqlite opens a 0-byte file as an empty database and writes a fresh schema into it,
    so the record of ids seen, sends and halts would vanish without a word: detect it
    before sqlite sees it. Only stat() and access() are used, never open(): closing a
    second descriptor on a database file drops the POSIX locks every sqlite connection
    of this process holds on it (sqlite's own "how to corrupt" list, section 2.2)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise LedgerError(f"cannot read the ledger at {path}: {exc.strerror}; make it readable and writable "
                         "by you (chmod u+rw), or set RELAY_HOME to another directory") from None
    if stat.S_ISDIR(st.st_mode):
        raise LedgerError(f"cannot open the ledger at {path}: it is a directory, not a file; move it aside "
                         "or set RELAY_HOME to another directory")
    if not os.access(path, os.R_OK | os.W_OK if write else os.R_OK):
        raise LedgerError(f"cannot read the ledger at {path}: permission denied; make it readable and writable "
                         "by you (chmod u+rw), or set RELAY_HOME to another directory")
    if st.st_size == 0:
        raise LedgerError(f"the ledger at {path} is empty (0 bytes): the record of relay ids seen, sends and halts "
                         f"is gone, and nothing was changed; restore it from a backup, or move it aside "
                         f"(mv {path} {path}.empty) to start a new ledger")
