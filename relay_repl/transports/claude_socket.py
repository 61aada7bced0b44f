"""claude-code-socket and claude-code-message: writing into a Claude session's inbox.

Facts this relies on (claude-code.md sections 2 and 4, verified on 2.1.328):
- The socket path comes from the session's registry record, never built.
- Frames are newline-delimited JSON; the inbox never writes back; we
  half-close and read to EOF. `priority:"now"` would abort the receiver's
  running model call, so it is used only when the operator asks to interrupt.
- There is no positive receipt. Receipts for dropped/held/refused/denied come
  back only to a `from: uds:<path>` socket that the *sending process* listens
  on, in the target's socket directory; so we send from this process, with our
  inbox listening there.
- Delivery is proven by the receiver's transcript: a record whose origin (top
  level, or `.attachment.origin` when absorbed mid-turn) has our `msg_id` and
  whose kernel-supplied `verifiedPeerPid`/`verifiedPeerProcStart` are ours.

claude-code-message adds the native `<cross-session-message>` wrapper naming
the operator's listed inbox, so the receiving model is told to answer with
SendMessage; it therefore requires the inbox to be registered as a peer.

What the operator approves is what is written: the plan's payload is the frame's
`message.content`, byte for byte (for claude-code-message, the wrapper included),
and `send` writes the approved payload, never a rebuilt one. The plan names every
file the send creates (the receipt listener in the target's socket directory); a
path already taken by a file this process did not create is never unlinked: a
fresh `<pid>-<8hex>.sock` name is planned instead (the receiver accepts any
`.sock` in its own directory, claude-code.md section 2.6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import os
import secrets
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relay_repl.core.approval import Approval
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import RelayError, TransportError
from relay_repl.system.proc import proc_start
from relay_repl.system.wire import encode_frames, peer_cred
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code import find_origin_records, peer_token, socket_is_ours
from relay_repl.agents.claude_code import transcript_for as transcript_path
from relay_repl.core.target import Target
from relay_repl.system.polling import poll_until
from relay_repl.transports.base import Capabilities, Look, StageLog, Transport

if TYPE_CHECKING:
    from relay_repl.transports.registry import TransportContext

RECEIPT_STATES = {
    "dropped": DeliveryState.FAILED,
    "held": DeliveryState.HELD,
    "denied": DeliveryState.REFUSED,
    "delivered": DeliveryState.IN_TURN,
    "expired": DeliveryState.REFUSED,
}


class ClaudeSocketTransport(Transport):
    name = "claude-code-socket"
    capabilities = Capabilities(receipts=True, live_only=True, same_uid_only=True)
    relies_on = "the messaging-socket wire format and transcript origin records were"

    @classmethod
    def from_context(cls, ctx: TransportContext) -> ClaudeSocketTransport:
        """The `relay_repl.transports` entry point's factory."""
        return cls(ctx.inbox, interrupt=ctx.interrupt)

    def __init__(self, inbox: Callable[[], Any] | None = None, *, interrupt: bool = False) -> None:
        """`inbox` returns the running Inbox (for receipts) or None."""
        self._inbox = inbox or (lambda: None)
        self.interrupt = interrupt
        self._reply_paths: dict[str, Path] = {}  # target socket dir -> the listener path planned there

    def refusal(self, target: Target) -> str | None:
        base = super().refusal(target)
        if base:
            return base
        if self.name not in target.transports:
            return f"{target.spec} does not offer {self.name} (its agent lists {', '.join(target.transports) or 'none'})"
        # discovery checked this too; re-checked here because the socket may have changed since
        ours, why = socket_is_ours(target.socket)
        return None if ours else f"{why}: outside the same-uid trust boundary"

    def plan_notes(self, target: Target) -> tuple[str, ...]:
        notes = []
        if target.state == "busy":
            notes.append("target is busy: the message is absorbed at its next tool boundary or runs as the next turn")
        if target.state == "waiting":
            notes.append(f"target is waiting ({ClaudeDetail.of(target).waiting_for or 'dialog'}): delivery may wait for the operator there")
        if self.interrupt:
            notes.append("priority now: this ABORTS the receiver's running model call")
        if self._inbox() is None:
            notes.append("no inbox listening here: hold/drop/refuse receipts cannot come back")
        notes.append(self._frame_note(target))
        return tuple(notes)

    def _frame_note(self, target: Target) -> str:
        reply = self._reply_path(target)
        auth = "an auth frame with the receiver's peerToken, then " if peer_token(target) else ""
        return (f"written to {target.socket} as {auth}one JSON line "
                f'{{"type":"user","message":{{"role":"user","content":<payload 3>}},"msg_id":<new uuid>,'
                f'"priority":"{"now" if self.interrupt else "next"}"'
                + (f',"from":"uds:{reply}"' if reply else "") + "}; the receiving model reads "
                "`Another Claude session sent a message:`, then payload 3, then Claude's own advisory paragraph")

    def _reply_path(self, target: Target, *, choose: bool = True) -> Path | None:
        """Where our receipt listener is (or will be) in the target's socket directory.

        An existing listener of ours there is reused; else `<pid>.sock` if nothing is
        at that name; else a fresh `<pid>-<8hex>.sock`. Chosen at plan time; `send`
        calls with choose=False and so binds the very path the plan named (or fails,
        never unlinking, if a file took that name since)."""
        inbox = self._inbox()
        sock = target.socket
        if inbox is None or not sock:
            return None
        d = Path(sock).parent
        for p in inbox.extra_paths:
            if Path(p).parent == d:
                return Path(p)
        planned = self._reply_paths.get(str(d))
        if planned is not None and (not choose or not (planned.exists() or planned.is_symlink())):
            return planned
        want = d / f"{os.getpid()}.sock"
        while want.exists() or want.is_symlink():
            want = d / f"{os.getpid()}-{secrets.token_hex(4)}.sock"
        self._reply_paths[str(d)] = want
        return want

    def plan_files(self, target: Target) -> tuple[str, ...]:
        inbox = self._inbox()
        reply = self._reply_path(target)
        if reply is None or inbox is None or reply in [Path(p) for p in inbox.extra_paths]:
            return ()
        return (f"creates {reply}: a listening socket for the receiver's hold/drop/refuse receipts "
                "(removed when this relay exits; never replaces an existing file)",)

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        return (
            f"{target.spec}'s transcript holds a record whose origin (or attachment.origin) has our msg_id and "
            f"verifiedPeerPid {os.getpid()} (this process); Claude sends no positive receipt"
        )

    async def _reply_socket(self, target: Target, approval: Approval | None = None) -> str | None:
        """Our listener in the target's socket directory (receipts only go there): the
        path the plan named (the approval covers it). Inbox.listen refuses a path someone
        else took since."""
        inbox = self._inbox()
        want = self._reply_path(target, choose=False)
        if inbox is None or want is None:
            return None
        if want not in [Path(p) for p in inbox.extra_paths]:
            await inbox.listen(path=want, approval=approval)
        return str(want)

    async def send(self, delivery: Delivery, target: Target, payload: str, log: StageLog, *,
                   approval: Approval | None = None) -> None:
        import anyio
        from anyio.abc import SocketAttribute

        self.require(approval, target, payload, f"{self.name} write to {target.spec}")
        sock_path = str(target.socket)
        log.checkpoint("connect")  # a relay-halt that arrived since the gate stops it here
        try:
            reply_sock = await self._reply_socket(target, approval)
        except RelayError as exc:  # e.g. the planned listener path was taken since: nothing written
            log.fail("listen", str(exc))
            return
        msg_id = str(uuid.uuid4())
        delivery.extra.msg_id, delivery.extra.sender_pid = msg_id, os.getpid()
        delivery.extra.sender_proc_start = proc_start(os.getpid())
        frames: list[dict[str, Any]] = []
        token = peer_token(target)
        if token:
            frames.append({"type": "auth", "token": token})
        frame: dict[str, Any] = {
            "type": "user",
            "message": {"role": "user", "content": payload},  # the approved bytes, as approved
            "msg_id": msg_id,
            "priority": "now" if self.interrupt else "next",
        }
        if reply_sock:
            frame["from"] = f"uds:{reply_sock}"
        frames.append(frame)
        data = encode_frames(frames)
        try:
            with anyio.fail_after(10):
                stream = await anyio.connect_unix(sock_path)
                async with stream:
                    pid, _uid, _gid = peer_cred(stream.extra(SocketAttribute.raw_socket))
                    if pid != target.pid:
                        log("connect", DeliveryState.REFUSED, f"socket served by pid {pid}, registry says {target.pid}: not writing")
                        delivery.reason = "socket owner does not match the registry"
                        return
                    log.checkpoint("write")
                    await stream.send(data)
                    await stream.send_eof()
                    try:
                        while await stream.receive():
                            pass
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        pass
        except ConnectionRefusedError:
            log.fail("connect", f"{sock_path} refused the connection: the session is gone (stale socket)")
            return
        except FileNotFoundError:
            log.fail("connect", f"{sock_path} does not exist any more: re-discover targets")
            return
        except (OSError, TimeoutError) as exc:
            log.fail("connect", f"could not write to {sock_path}: {exc}")
            return
        log("write", DeliveryState.QUEUED, f"{len(data)} bytes written to {sock_path} (msg_id {msg_id})",
            msg_id=msg_id, socket=sock_path, reply_to=reply_sock, frames=len(frames), content=payload)

    async def look(self, delivery: Delivery, target: Target, payload: str) -> Look:
        """The transcript records carrying our msg_id (both origin paths), and the receipts so far."""
        import anyio

        msg_id = delivery.extra.msg_id
        receipts = [e.data.get("receipt") for e in delivery.evidence if e.stage == "receipt"]
        if not msg_id:
            return Look(transport=self.name, verdict="no msg_id was recorded: nothing was written to the socket",
                        landed=None)
        path = transcript_path(target)
        hits = await anyio.to_thread.run_sync(find_origin_records, path, msg_id) if path else []
        me_pid = delivery.extra.sender_pid
        ours = [h for h in hits if h["origin"].get("verifiedPeerPid") == me_pid]
        data: dict[str, Any] = {"msg_id": msg_id, "transcript": str(path) if path else "none found",
                                "receipts": receipts or "none"}
        if len(hits) > 1:
            verdict, landed = f"{len(hits)} records carry msg_id {msg_id}: not unique, trusting neither", None
        elif ours:
            verdict, landed = f"landed: transcript record at .{ours[0]['where']} has our msg_id and pid {me_pid}", True
        elif hits:
            verdict, landed = "a record has our msg_id but another verifiedPeerPid", None
        else:
            verdict = "no transcript record carries our msg_id yet (a busy receiver takes it at its next boundary)"
            landed = False if path else None
        return Look(transport=self.name, landed=landed, verdict=verdict, data=data, records=hits)

    async def confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float) -> None:
        import anyio

        msg_id = delivery.extra.msg_id
        if not msg_id:
            return
        me_pid, me_start = delivery.extra.sender_pid, delivery.extra.sender_proc_start
        seen_receipts = 0

        async def check() -> bool | None:
            """True once a receipt or the transcript settled it, else None (keep reading)."""
            nonlocal seen_receipts
            inbox = self._inbox()
            receipts = [r for r in (inbox.receipts if inbox else []) if r.get("orig_msg_id") == msg_id]
            for r in receipts[seen_receipts:]:
                ok, why = r.sent_by(target.pid, target.proc_start)
                if not ok:  # any local process can write a frame to our inbox: a claim, logged, no state change
                    claim = f"{r.get('action')} {r.get('status') or r.get('state') or ''}".strip()
                    log.ledger.event("unverified-claim", delivery=delivery.key, relay_id=delivery.relay_id,
                                     data={"detail": f"unverified claim {claim!r} ignored, state unchanged: {why}",
                                           "claim": claim, "why": why, "frame": r.frame, "pid": r.pid,
                                           "proc_start": r.proc_start})
                    delivery.extra.unverified_claims.append(f"{claim}: {why}")
                    log.progress(f"ignored an unverified receipt ({claim}): {why}")
                    continue
                status = r.get("status", "?")
                state = RECEIPT_STATES.get(status, DeliveryState.UNKNOWN)
                detail = r.get("drop_reason") or r.get("status_detail") or r.get("reason") or ""
                if state in (DeliveryState.FAILED, DeliveryState.REFUSED):
                    delivery.reason = f"receiver {status} it{': ' + detail if detail else ''}"
                log("receipt", state, f"receiver says {status} {detail}".strip(), receipt=r.frame, pid=r.pid)
                if state in (DeliveryState.FAILED, DeliveryState.REFUSED):
                    return True
            seen_receipts = len(receipts)
            path = transcript_path(target)
            hits = await anyio.to_thread.run_sync(find_origin_records, path, msg_id) if path else []
            if hits:
                ours = [h for h in hits if h["origin"].get("verifiedPeerPid") == me_pid
                        and str(h["origin"].get("verifiedPeerProcStart")) == str(me_start)]
                if len(hits) > 1:
                    log("transcript", DeliveryState.UNKNOWN, f"{len(hits)} records carry msg_id {msg_id}: not unique, not trusting either",
                        hits=hits)
                    return True
                if ours:
                    h = ours[0]
                    log("transcript", DeliveryState.IN_TURN,
                        f"transcript record at .{h['where']} has our msg_id and verifiedPeerPid {me_pid}",
                        transcript=str(path), record=h)
                else:
                    log("transcript", DeliveryState.UNKNOWN,
                        f"a record has our msg_id but verifiedPeerPid {hits[0]['origin'].get('verifiedPeerPid')} is not ours ({me_pid})",
                        record=hits[0])
                return True
            return None

        def progress(_left: float) -> None:
            log.progress(f"waiting for {target.spec}'s transcript to show msg_id {msg_id[:8]}…")

        if await poll_until(check, timeout=timeout, interval=0.1, progress=progress) is None:
            delivery.reason = (f"written, but no transcript record with msg_id {msg_id} after {timeout:.0f}s "
                               "(a busy receiver takes it at its next tool boundary or turn); do not re-send")


class ClaudeMessageTransport(ClaudeSocketTransport):
    """A delivery the receiver can answer natively with SendMessage."""

    name = "claude-code-message"
    capabilities = Capabilities(native_reply=True, receipts=True, live_only=True, same_uid_only=True)

    @classmethod
    def from_context(cls, ctx: TransportContext) -> ClaudeMessageTransport:
        """The `relay_repl.transports` entry point's factory."""
        return cls(ctx.inbox, ctx.registration, interrupt=ctx.interrupt)

    def __init__(self, inbox: Callable[[], Any] | None = None, registration: Callable[[], Any] | None = None,
                 **kw: Any) -> None:
        super().__init__(inbox, **kw)
        self._registration = registration or (lambda: None)

    def refusal(self, target: Target) -> str | None:
        base = super().refusal(target)
        if base:
            return base
        reg = self._registration()
        if reg is None:
            return "the operator inbox is not listed as a Claude peer: run `await session.register_inbox()` first"
        if Path(reg.socket_path).parent != Path(str(target.socket)).parent:
            return "the listed inbox is in another socket directory than the target's: its reply could not reach us"
        return None

    def _reply_path(self, target: Target, *, choose: bool = True) -> Path | None:
        reg = self._registration()
        return Path(reg.socket_path) if reg else None

    def plan_files(self, target: Target) -> tuple[str, ...]:
        return ()  # replies come back to the listed inbox socket, created (and planned) by register_inbox

    async def _reply_socket(self, target: Target, approval: Approval | None = None) -> str | None:
        reg = self._registration()
        if reg is None:
            raise TransportError("the operator inbox is no longer listed as a Claude peer: nothing written")
        return str(reg.socket_path)

    def payload(self, envelope: Envelope) -> str:
        """The native wrapper around the envelope, naming the listed inbox as the reply
        address: exactly the `content` the receiver gets (from-mode is what we assert)."""
        reg = self._registration()
        if reg is None:  # refusal() keeps this transport out of any plan then
            raise TransportError("claude-code-message needs the operator inbox listed: `await session.register_inbox()`")
        return (f'<cross-session-message from="uds:{reg.socket_path}" from-name="{reg.name}" from-mode="prompting">\n'
                f"{envelope.compose()}\n</cross-session-message>")

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        return super().delivered_when(target, envelope) + "; the wrapper in payload 3 lets the receiver answer with SendMessage"
