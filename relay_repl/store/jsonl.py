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


CHUNK = 4 * 1024 * 1024
MAX_LINE = 8 * 1024 * 1024
"""A line longer than this is skipped (and counted), so memory stays bounded whatever the file holds."""


class LineScan:
    """Streams the complete lines of a (possibly huge, possibly growing) JSONL file that
    contain `needle` and every one of `also`, in bounded memory (one chunk plus one line).

    Why not `records()`: an audit (`relay verify`) may read a multi-GiB transcript; parsing
    every line is what makes jq slow. Here the C-speed `bytes.find` locates the needle in
    each chunk and only the lines around a hit are cut out; the caller parses those alone.
    `oversized` counts lines skipped for exceeding MAX_LINE; `scanned` is the bytes read.
    """

    def __init__(self, path: Path | str, needle: bytes, also: tuple[bytes, ...] = (), *,
                 chunk: int = CHUNK, max_line: int = MAX_LINE) -> None:
        if not needle:
            raise ValueError("needle must not be empty")
        self.path, self.needle, self.also = path, needle, also
        self.chunk, self.max_line = chunk, max_line
        self.oversized = 0
        self.scanned = 0

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        """(byte offset, line without its newline) per matching complete line."""
        needle, also = self.needle, self.also
        with open(self.path, "rb") as f:
            carry = b""  # the unfinished last line of the previous chunk
            base = 0  # file offset of carry[0]
            skipping = False  # inside an oversized line: drop bytes up to its newline
            while True:
                block = f.read(self.chunk)
                if not block:
                    return  # a last piece with no newline may still be being written: never parsed
                self.scanned += len(block)
                if skipping:
                    nl = block.find(b"\n")
                    if nl < 0:
                        base += len(block)
                        continue
                    skipping = False
                    base += nl + 1
                    block = block[nl + 1:]
                buf = carry + block if carry else block
                end = buf.rfind(b"\n")
                if end < 0:
                    if len(buf) > self.max_line:
                        self.oversized += 1
                        skipping, carry = True, b""
                        base += len(buf)
                    else:
                        carry = buf
                    continue
                pos = 0
                while True:
                    hit = buf.find(needle, pos, end)
                    if hit < 0:
                        break
                    start = buf.rfind(b"\n", 0, hit) + 1
                    stop = buf.find(b"\n", hit, end + 1)
                    line = buf[start:stop]
                    pos = stop + 1
                    if len(line) > self.max_line:
                        self.oversized += 1
                        continue
                    if all(a in line for a in also):
                        yield base + start, line
                rest = buf[end + 1:]
                base += end + 1
                if len(rest) > self.max_line:
                    self.oversized += 1
                    skipping, carry = True, b""
                    base += len(rest)
                else:
                    carry = rest
