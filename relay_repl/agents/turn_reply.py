"""The turn reply: an agent's own final message in the turn our message started.

Why this route exists: an answer that needs a tool needs a permission, and Codex's
default `workspace-write` sandbox refuses the unix socket `relay reply` writes to.
But every agent already records, in its own transcript (Claude) or rollout (Codex),
the turn our message started and the final message that ended it. Reading that
record needs no tool, no permission and no cooperation, and its provenance is the
receiver's own record: the harness wrote it, keyed by an id the model never sees
(Codex's queue `client_id`, Claude's `msg_id` with its kernel-supplied peer pid).

The value here is shared; each agent's reader lives with that agent's knowledge
(`codex/rollout.py`, `claude_code/transcript.py`). A watcher is polled: it remembers how
far it read, so a long transcript is read once, not on every poll.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import relay_repl.store.jsonl as jsonl
from relay_repl.core.turn_reply import PROVENANCE, TurnReply, TurnStatus  # the value lives in core

__all__ = ["PROVENANCE", "Tail", "TurnReply", "TurnStatus", "TurnWatch"]


class TurnWatch(Protocol):
    """Polled until the turn our message started has ended (read-only)."""

    source: Path

    def poll(self) -> TurnReply | None:
        """The turn's outcome once it ended, else None (not started or still running)."""
        ...


class Tail:
    """Complete JSONL records appended since the last read (the file may still grow).

    Streams line by line (constant memory on a transcript of any size) and remembers the
    end of the last complete line it consumed, so the next read starts there; a last
    line without its newline is still being written and is left for the next read.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._offset = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for at, raw in jsonl.complete_lines(self.path, self._offset):
            self._offset = at + len(raw)
            rec = jsonl.parse_object(raw)
            if rec is not None:
                yield rec
