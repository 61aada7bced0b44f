"""`SocketWire`: what a kind whose sessions listen on a messaging socket tells the generic
socket transports (transports/socket_message.py) about that socket.

Why a protocol here: the layers forbid `agents/` importing `transports/`, and a transport
must never branch on a kind. So the facts of one kind's wire (its frames, its receipts, the
records in its own file that prove a delivery, the wrapper its sessions answer natively)
live in the kind's package (e.g. agents/claude_code/socket_ops.py) behind this protocol,
and the transport does the generic part: plan, gate, connect, check the socket's owner,
write, half-close, read receipts and poll the records. A kind offers it through
`AgentKind.transports.socket_wire()` (None by default: no socket).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from relay_repl.core.delivery import DeliveryState
from relay_repl.core.target import Target

if TYPE_CHECKING:
    from relay_repl.core.inbound import Receipt


UNCHECKED: Any = object()
"""`SocketWire.ours(..., proc_start=UNCHECKED)`: compare the sending pid only."""


class WireMessage(BaseModel):
    """The bytes one send writes, and how many frames they hold."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    data: bytes
    frames: int


class ReceiptReading(BaseModel):
    """What a receipt frame (already proven to come from the receiver) says about a delivery."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    status: str
    state: DeliveryState
    detail: str = ""


class ListedPeer(Protocol):
    """The operator's inbox as listed in the kind's peer registry (an `AgentKind.replies.inbox_listing`)."""

    name: str
    socket_path: Path


class SocketWire(Protocol):
    """One kind's messaging socket, as the socket transports need it."""

    relies_on: str
    """The reverse-engineered behaviour the socket transports trust, in words (the version gate)."""
    pid_field: str
    """The record field that names the sending process (kernel-supplied), for messages."""
    peer_label: str
    """Whose peer the operator's inbox is listed as, for messages ("Claude")."""
    reply_tool: str
    """The tool a wrapped message's receiver answers with natively, for the plan ("SendMessage")."""

    def refusal(self, target: Target) -> str | None:
        """Why the target's socket may not be written now (gone, not ours), or None."""
        ...

    def notes(self, target: Target, *, interrupt: bool) -> tuple[str, ...]:
        """Plan notes about the receiver's state and what the write's priority does to it."""
        ...

    def frame_note(self, target: Target, reply: Path | None, *, interrupt: bool) -> str:
        """The plan's description of the frames written and what the receiving model reads."""
        ...

    def free_listener(self, directory: Path) -> Path:
        """A path in the target's socket directory, free now, where a receipt listener may bind."""
        ...

    def message(self, target: Target, payload: str, msg_id: str, *, interrupt: bool,
                reply_to: str | None) -> WireMessage:
        """The frames that carry `payload` (byte for byte) under `msg_id`, encoded."""
        ...

    def delivered_when(self, target: Target, sender_pid: int) -> str:
        """The evidence in the receiver's record that counts as delivered, in words."""
        ...

    def records(self, target: Target, msg_id: str) -> tuple[Path | None, list[dict[str, Any]]]:
        """The receiver's record file and every record in it carrying `msg_id` (blocking)."""
        ...

    def held(self, target: Target, payload: str) -> tuple[Path | None, list[dict[str, Any]]]:
        """The receiver's record file and its records proving it holds exactly `payload`, not yet
        taken by a turn (blocking): what `queued` rests on while no origin record exists yet.
        Such a record proves the bytes are held, never who sent them."""
        ...

    def sender_pid(self, hit: dict[str, Any]) -> Any:
        """The sending pid a record carrying our msg_id names."""
        ...

    def ours(self, hits: list[dict[str, Any]], pid: int | None, proc_start: Any = UNCHECKED) -> list[dict[str, Any]]:
        """The records sent by process `pid` (and, unless UNCHECKED, started at `proc_start`)."""
        ...

    def receipt(self, receipt: Receipt) -> ReceiptReading:
        """What a receipt from the receiver says (its status, the delivery state it means)."""
        ...

    def wrap(self, text: str, listing: ListedPeer) -> str:
        """`text` inside the kind's native peer-message wrapper naming `listing` as the reply
        address: what a session of this kind answers natively."""
        ...
