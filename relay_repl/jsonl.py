"""Reading the JSONL files the agents append to while we read (transcripts, rollouts).

One reader for every place that needs it: a missing file yields nothing, a line
that is not a JSON object is skipped, and the piece after the last newline is
never parsed, because it may be a line the agent is still writing.
"""

from __future__ import annotations

import json
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
