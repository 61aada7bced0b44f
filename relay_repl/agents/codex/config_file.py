"""`$CODEX_HOME/config.toml`, parsed once per version of the file.

Why: every send to a Codex thread asks it twice which reply routes it allows (the plan's reply
route, then the send's own), and `sqlite_home` reads it again where discovery did not: three
TOML parses of an unchanged file per send (issue 33: ~2.5 ms of relay's own CPU each). A parse is
reused only while the file is the same: same inode, size, mtime and ctime (nanoseconds), read
again whenever any of them changed. A file modified within the last RACY seconds is re-read
each time (as git does with a "racily clean" index): an edit in the same clock tick as our read,
leaving size and times as they were, must never be answered from the earlier parse.

Read through the one loader (store/loader.py): a file Codex cannot read either is a
FileProblem, kept as the outcome until the file changes, never a traceback.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from relay_repl.core.errors import FileProblem

RACY = 2.0
"""Seconds after its last change during which a file is read again on every ask."""

Stamp = tuple[int, int, int, int, int]

_parsed: dict[tuple[str, str], tuple[Stamp, dict[str, Any] | FileProblem | None]] = {}


def _stamp(path: Path) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def codex_config(codex_home: Path, fix: str) -> dict[str, Any] | None:
    """The parsed config.toml of `codex_home` (read-only: never mutate it), None when there is
    none; raises FileProblem (with `fix`) when it is not readable TOML."""
    path = codex_home / "config.toml"
    key = (str(path), fix)
    stamp = _stamp(path)
    if stamp is None:
        _parsed.pop(key, None)
        return None
    kept = _parsed.get(key)
    if kept is not None and kept[0] == stamp:
        outcome = kept[1]
    else:
        outcome = _read(path, fix)
        racy = time.time() - max(stamp[3], stamp[4]) / 1e9 < RACY
        if racy:
            _parsed.pop(key, None)
        else:
            _parsed[key] = (stamp, outcome)
    if isinstance(outcome, FileProblem):
        raise outcome
    return outcome


def _read(path: Path, fix: str) -> dict[str, Any] | FileProblem | None:
    from relay_repl.core import file_shape
    from relay_repl.store.loader import read_text

    try:
        text = read_text(path, fix, missing_ok=True)
        return None if text is None else file_shape.toml_table(text, path, fix)
    except FileProblem as exc:
        return exc
