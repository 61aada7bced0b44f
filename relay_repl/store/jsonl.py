"""Reading the JSONL files the agents append to while we read (transcripts, rollouts).

One reader for every place that needs it: a missing file yields nothing, a line
that is not a JSON object is skipped, and the piece after the last newline is
never parsed, because it may be a line the agent is still writing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def records(path: Path | str, offset: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset, record) for each complete JSON-object line at or after `offset`."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return
    pos = offset
    for raw in data.split(b"\n")[:-1]:
        at = pos
        pos += len(raw) + 1
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            yield at, rec


def latest_first(path: str | os.PathLike[str], *, tail: int, containing: bytes) -> Iterator[dict[str, Any]]:
    """Complete JSON-object lines within the last `tail` bytes that contain `containing`,
    newest first: for "what is the latest X", without parsing the rest of the file."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            start = max(0, size - tail)
            f.seek(start)
            data = f.read()
    except OSError:
        return
    pieces = data.split(b"\n")[:-1]  # the last piece may still be being written
    if start:
        pieces = pieces[1:]  # the first may be cut by the tail
    for raw in reversed(pieces):
        if containing not in raw:
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            yield rec
