"""Claude Code's messaging socket, as the generic socket transports need it (agents/socket_wire.py).

Facts this holds (claude-code.md sections 2 and 4, verified on 2.1.328):
- The socket path comes from the session's registry record, never built; it must be a
  Unix socket owned by our uid (the same-uid trust boundary).
- Frames are newline-delimited JSON: an `auth` frame with the receiver's peerToken when its
  key file is readable, then one `user` frame whose `message.content` is the payload, with a
  fresh `msg_id` and `priority`. `priority:"now"` aborts the receiver's running model call,
  so it is used only when the operator asks to interrupt.
- There is no positive receipt. Receipts for dropped/held/refused/denied come back only to a
  `from: uds:<path>` socket in the target's socket directory (the receiver accepts any
  `.sock` there, section 2.6).
- Delivery is proven by the receiver's transcript: a record whose origin (top level, or
  `.attachment.origin` when absorbed mid-turn) has our `msg_id` and whose kernel-supplied
  `verifiedPeerPid`/`verifiedPeerProcStart` are ours.
- A session answers natively (SendMessage) only a peer it lists, named in the
  `<cross-session-message>` wrapper.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.agents.claude_code import plan_words
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code.evidence import find_origin_records, peer_token, queued_records, transcript_for
from relay_repl.agents.claude_code.provider import socket_is_ours
from relay_repl.agents.socket_wire import UNCHECKED, ListedPeer, ReceiptReading, WireMessage
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.target import Target
from relay_repl.system.wire import encode_frames

if TYPE_CHECKING:
    from relay_repl.core.inbound import Receipt

RECEIPT_STATES = {
    "dropped": DeliveryState.FAILED,
    "held": DeliveryState.HELD,
    "denied": DeliveryState.REFUSED,
    "delivered": DeliveryState.IN_TURN,
    "expired": DeliveryState.REFUSED,
}


class ClaudeSocketWire:
    """`SocketWire` for Claude Code's inbox socket."""

    relies_on = "the messaging-socket wire format and transcript origin records were"
    pid_field = "verifiedPeerPid"
    peer_label = "Claude"
    reply_tool = "SendMessage"

    def refusal(self, target: Target) -> str | None:
        # discovery checked this too; re-checked here because the socket may have changed since
        ours, why = socket_is_ours(target.socket)
        return None if ours else f"{why}: outside the same-uid trust boundary"

    def notes(self, target: Target, *, interrupt: bool) -> tuple[str, ...]:
        return plan_words.state_notes(target.state, ClaudeDetail.of(target).waiting_for, interrupt=interrupt)

    def frame_note(self, target: Target, reply: Path | None, *, interrupt: bool) -> str:
        return plan_words.frame_note(target.socket, bool(peer_token(target)), reply, interrupt=interrupt)

    def free_listener(self, directory: Path) -> Path:
        """`<pid>.sock` if nothing is at that name, else a fresh `<pid>-<8hex>.sock`."""
        return Path(plan_words.free_listener(str(directory)))

    def message(self, target: Target, payload: str, msg_id: str, *, interrupt: bool,
                reply_to: str | None) -> WireMessage:
        frames: list[dict[str, Any]] = []
        token = peer_token(target)
        if token:
            frames.append({"type": "auth", "token": token})
        frame: dict[str, Any] = {
            "type": "user",
            "message": {"role": "user", "content": payload},  # the approved bytes, as approved
            "msg_id": msg_id,
            "priority": "now" if interrupt else "next",
        }
        if reply_to:
            frame["from"] = f"uds:{reply_to}"
        frames.append(frame)
        return WireMessage(data=encode_frames(frames), frames=len(frames))

    def delivered_when(self, target: Target, sender_pid: int) -> str:
        return plan_words.delivered_when(target.spec, sender_pid)

    def records(self, target: Target, msg_id: str) -> tuple[Path | None, list[dict[str, Any]]]:
        path = transcript_for(target)
        return path, (find_origin_records(path, msg_id) if path else [])

    def held(self, target: Target, payload: str) -> tuple[Path | None, list[dict[str, Any]]]:
        """A busy session records a socket message it cannot take yet as a `queue-operation`
        `enqueue` whose `content` is the message (claude-code.md 4.2, 4.3) before any origin record:
        exactly our payload there (its relay id inside) proves Claude holds it, not that a turn took it."""
        path = transcript_for(target)
        return path, (queued_records(path, payload) if path else [])

    def sender_pid(self, hit: dict[str, Any]) -> Any:
        return hit["origin"].get("verifiedPeerPid")

    def ours(self, hits: list[dict[str, Any]], pid: int | None, proc_start: Any = UNCHECKED) -> list[dict[str, Any]]:
        return [h for h in hits if h["origin"].get("verifiedPeerPid") == pid
                and (proc_start is UNCHECKED or str(h["origin"].get("verifiedPeerProcStart")) == str(proc_start))]

    def receipt(self, receipt: Receipt) -> ReceiptReading:
        status = receipt.get("status", "?")
        detail = receipt.get("drop_reason") or receipt.get("status_detail") or receipt.get("reason") or ""
        return ReceiptReading(status=status, state=RECEIPT_STATES.get(status, DeliveryState.UNKNOWN), detail=detail)

    def wrap(self, text: str, listing: ListedPeer) -> str:
        """The native wrapper naming the listed inbox as the reply address (from-mode is what we assert)."""
        return (f'<cross-session-message from="uds:{listing.socket_path}" from-name="{listing.name}" '
                f'from-mode="prompting">\n{text}\n</cross-session-message>')
