"""`DurableQueue`: what a kind whose threads take messages from a durable queue tells the
generic queue transport (transports/durable_queue.py).

Why a protocol here: the layers forbid `agents/` importing `transports/`, and a transport
must never branch on a kind. The kind's facts (the command that enqueues and what it
prints, the queue's schema read back read-only, which turn in its own record proves the
item was delivered) live in its package (e.g. agents/codex/queue_ops.py); the transport
runs the command under the gate, reads the row back and polls the record. A kind offers it
through `AgentKind.transports.durable_queue()` (None by default: no queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from relay_repl.core.target import Target


class EnqueueCommand(BaseModel):
    """The process that enqueues one message: argv and its whole environment."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    argv: tuple[str, ...]
    env: dict[str, str]


class Enqueued(BaseModel):
    """What the enqueue command said: the item id, or why it failed."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    item_id: str | None = None
    failure: str | None = None
    client_id: str | None = None
    """The item's client id when the enqueuer chose it (the record's turn carries it)."""
    via: str | None = None
    """How it was enqueued, for the stage line, when not by the command."""


class RecordScan(Protocol):
    """An incremental reader of one record file: each call reads only what was appended since."""

    def find(self, *, client_id: str | None, text: str) -> dict[str, Any] | None:
        ...


class ItemReader(Protocol):
    """`DurableQueue.read_item` for one target, kept across a confirm's polls (blocking)."""

    def read(self, item_id: str) -> dict[str, Any] | None:
        ...

    def close(self) -> None:
        ...


class DurableQueue(Protocol):
    """One kind's durable queue, as the queue transport needs it."""

    relies_on: str
    """The reverse-engineered behaviour the queue transport trusts, in words (the version gate)."""
    command_name: str
    """The enqueue command's name in messages ("codex queue")."""

    def refusal(self, target: Target) -> str | None:
        """Why the target cannot take a queued item (no thread id, a queue note), or None."""
        ...

    def notes(self, target: Target) -> tuple[str, ...]:
        """Plan notes: when the item will run given the target's state."""
        ...

    def delivered_when(self, target: Target) -> str:
        """The evidence that counts as delivered, in words."""
        ...

    def command(self, target: Target, payload: str, binary: str | None, env: Mapping[str, str]) -> EnqueueCommand:
        """The command that enqueues `payload` for `target` (`binary`: an explicit client to run)."""
        ...

    async def enqueue(self, target: Target, payload: str) -> Enqueued | None:
        """Enqueue through the queue's own host without starting a process, when it answers
        (Codex: the daemon's `thread/queue/add`, the call its command makes); None when nothing
        was asked (then the command runs). Once the request may have left, never None."""
        ...

    def enqueued(self, target: Target, returncode: int, stdout: str, stderr: str) -> Enqueued:
        """Read the command's output: our item id, or the one-line failure."""
        ...

    def queue_file(self, target: Target) -> Path:
        """The queue's file (read-only), for messages."""
        ...

    def read_item(self, target: Target, item_id: str) -> dict[str, Any] | None:
        """Our item's row read back (keys state, ahead, failure, client_id), or None once it left
        the queue (blocking)."""
        ...

    def item_reader(self, target: Target) -> ItemReader:
        """`read_item` kept across one confirm's polls (what it keeps open, it closes on `close`).
        Optional: the transport reads with `read_item` for a kind without it."""
        ...

    def record_file(self, target: Target) -> Path | None:
        """The target's record file where a delivered item shows, or None when none is found."""
        ...

    def scan(self, record: Path) -> RecordScan:
        """An incremental reader of `record`."""
        ...

    def find(self, record: Path, *, client_id: str | None, text: str) -> dict[str, Any] | None:
        """The turn carrying our item (keys turn_id, turn_trigger, ...) in the whole record, or None."""
        ...

    def turns_since(self, record: Path, since: float) -> list[dict[str, Any]]:
        """The record's turns since `since` (for a look)."""
        ...

    def from_queue(self, hit: dict[str, Any]) -> bool:
        """Whether the turn that carries our item was started by the queue (else: typed, not ours)."""
        ...

    def taker_gone(self, target: Target) -> str | None:
        """Why no process will take a queued item for `target` now (its process exited), or None
        when one may. Asked once an enqueue succeeded: a queue that accepts an item for a thread
        nobody runs (`codex queue` exits 0 for it) must be reported as waiting for that reason,
        not left to time out unexplained. Optional: the transport treats a kind without it as None."""
        ...
