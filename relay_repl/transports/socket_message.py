"""Writing into an agent session's messaging socket: the socket transports, generic over the kind.

Which kind's sessions listen on such a socket, how a frame looks, what a receipt says and which
record in the receiver's own file proves a delivery are the kind's facts, asked of the target's
kind (`AgentKind.transports.socket_wire()`, agents/socket_wire.py; Claude Code's: agents/claude_code/socket_ops.py).
The transport's name is its entry point's (`claude-code-socket`, `claude-code-message` in
pyproject.toml) and its capability flags are the ones the kind's adapter declares for that name.

What this module does for any such kind:
- the plan names every file the send creates (the receipt listener in the target's socket
  directory); a path already taken by a file this process did not create is never unlinked: a
  fresh name is planned instead;
- what the operator approves is what is written: the plan's payload goes into the frame byte
  for byte (for the message variant, the kind's native wrapper included), and `send` writes
  the approved payload, never a rebuilt one;
- the write connects, refuses a socket served by another pid than the target's, half-closes and
  reads to EOF; receipts come back only to a listener of the *sending process*, so we send from
  this process with our inbox listening there, and a receipt moves the delivery only when the
  receiver's own process sent it;
- delivery is the receiver's record carrying our msg_id with our pid as the kernel-supplied sender.

`SocketMessageTransport` adds the kind's native wrapper naming the operator's listed inbox, so
the receiving model is told to answer natively; it therefore requires the inbox to be listed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.agents.socket_wire import SocketWire
from relay_repl.core import transport_words
from relay_repl.core.approval import Approval
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import RelayError, TransportError
from relay_repl.core.target import Target
from relay_repl.system.polling import poll_until
from relay_repl.system.proc import proc_start
from relay_repl.system.wire import peer_cred
from relay_repl.transports.base import CONFIRM_POLL_MAX, Look, StageLog
from relay_repl.transports.offered import KindWayTransport

if TYPE_CHECKING:
    from relay_repl.agents.kind import AgentKind
    from relay_repl.transports.registry import TransportContext


class SocketTransport(KindWayTransport[SocketWire]):
    """Frames written into the target session's messaging socket."""

    way_noun = "messaging socket"

    @staticmethod
    def way(kind: AgentKind) -> SocketWire | None:
        return kind.transports.socket_wire()

    @classmethod
    def from_context(cls, ctx: TransportContext) -> SocketTransport:
        """The `relay_repl.transports` entry point's factory."""
        return cls(ctx.name, ctx.inbox, interrupt=ctx.interrupt, defer=True)

    def __init__(self, name: str, inbox: Callable[[], Any] | None = None, *, interrupt: bool = False,
                 defer: bool = False) -> None:
        """`name`: the transport (an adapter's `[[transports]]` entry of a kind with a socket wire);
        `inbox` returns the running Inbox (for receipts) or None; `defer`: see KindWayTransport."""
        super().__init__(name, defer=defer)
        self._inbox = inbox or (lambda: None)
        self.interrupt = interrupt
        self._reply_paths: dict[str, Path] = {}  # target socket dir -> the listener path planned there

    def refusal(self, target: Target) -> str | None:
        base = super().refusal(target)
        if base:
            return base
        return self.way_refusal(target) or self.way_of(target).refusal(target)

    def plan_notes(self, target: Target) -> tuple[str, ...]:
        wire = self.way_of(target)
        notes = list(wire.notes(target, interrupt=self.interrupt))
        if self._inbox() is None:
            notes.append(transport_words.NO_INBOX)
        notes.append(wire.frame_note(target, self._reply_path(target), interrupt=self.interrupt))
        return tuple(notes)

    def _reply_path(self, target: Target, *, choose: bool = True) -> Path | None:
        """Where our receipt listener is (or will be) in the target's socket directory.

        An existing listener of ours there is reused; else a name free there now (the kind's
        `free_listener`). Chosen at plan time; `send` calls with choose=False and so binds the
        very path the plan named (or fails, never unlinking, if a file took that name since)."""
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
        want = self.way_of(target).free_listener(d)
        self._reply_paths[str(d)] = want
        return want

    def plan_files(self, target: Target) -> tuple[str, ...]:
        inbox = self._inbox()
        reply = self._reply_path(target)
        if reply is None or inbox is None or reply in [Path(p) for p in inbox.extra_paths]:
            return ()
        return (transport_words.listener_file(reply),)

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        return self.way_of(target).delivered_when(target, os.getpid())

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
        wire = self.way_of(target)
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
        message = wire.message(target, payload, msg_id, interrupt=self.interrupt, reply_to=reply_sock)
        data = message.data
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
            msg_id=msg_id, socket=sock_path, reply_to=reply_sock, frames=message.frames, content=payload)

    async def look(self, delivery: Delivery, target: Target, payload: str) -> Look:
        """The records carrying our msg_id in the receiver's own file, and the receipts so far."""
        import anyio

        msg_id = delivery.extra.msg_id
        receipts = [e.data.get("receipt") for e in delivery.evidence if e.stage == "receipt"]
        if not msg_id:
            return Look(transport=self.name, verdict="no msg_id was recorded: nothing was written to the socket",
                        landed=None)
        wire = self.way_of(target)
        name = self.evidence_name(target)
        path, hits = await anyio.to_thread.run_sync(wire.records, target, msg_id)
        me_pid = delivery.extra.sender_pid
        ours = wire.ours(hits, me_pid)
        data: dict[str, Any] = {"msg_id": msg_id, name: str(path) if path else "none found",
                                "receipts": receipts or "none"}
        if len(hits) > 1:
            verdict, landed = f"{len(hits)} records carry msg_id {msg_id}: not unique, trusting neither", None
        elif ours:
            verdict, landed = f"landed: {name} record at .{ours[0]['where']} has our msg_id and pid {me_pid}", True
        elif hits:
            verdict, landed = f"a record has our msg_id but another {wire.pid_field}", None
        else:
            verdict = f"no {name} record carries our msg_id yet (a busy receiver takes it at its next boundary)"
            landed = False if path else None
        return Look(transport=self.name, landed=landed, verdict=verdict, data=data, records=hits)

    async def confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float) -> None:
        import anyio

        msg_id = delivery.extra.msg_id
        if not msg_id:
            return
        wire = self.way_of(target)
        name = self.evidence_name(target)
        me_pid, me_start = delivery.extra.sender_pid, delivery.extra.sender_proc_start
        seen_receipts = 0
        held = False  # the receiver's record shows it holds the payload (queued), no turn yet
        read_to: dict[str, int] = {}  # the record file read by the last poll -> its size then

        def look_once(held: bool) -> tuple[Any, list[dict[str, Any]], Any, list[dict[str, Any]]]:
            """One poll's reads of the receiver's record (issue 33: two hops a poll before): the
            records carrying our msg_id; while none does and it was not yet seen held, the records
            holding exactly this payload."""
            path, hits = wire.records(target, msg_id)
            read_to.clear()
            if path is not None:
                read_to[str(path)] = _size(path)
            if hits or held:
                return path, hits, None, []
            where, holding = wire.held(target, payload)
            return path, hits, where, holding

        def small_since() -> bool:
            """The record file the last poll read grew by at most INLINE_READ since: the wire's reads
            remember where they stopped, so this poll reads only that much (the first poll of a send
            asks a new question and may read the whole file: a worker thread's)."""
            return any(0 <= _size(p) - n <= INLINE_READ for p, n in read_to.items())

        async def check() -> bool | None:
            """True once a receipt or the receiver's record settled it, else None (keep reading)."""
            nonlocal seen_receipts, held
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
                reading = wire.receipt(r)
                state, detail = reading.state, reading.detail
                if state in (DeliveryState.FAILED, DeliveryState.REFUSED):
                    delivery.reason = f"receiver {reading.status} it{': ' + detail if detail else ''}"
                log("receipt", state, f"receiver says {reading.status} {detail}".strip(), receipt=r.frame, pid=r.pid)
                if state in (DeliveryState.FAILED, DeliveryState.REFUSED):
                    return True
            seen_receipts = len(receipts)
            if small_since():  # a few lines appended: read here, not at the price of a thread hop
                path, hits, where, holding = look_once(held)
            else:
                path, hits, where, holding = await anyio.to_thread.run_sync(look_once, held)
            if hits:
                ours = wire.ours(hits, me_pid, me_start)
                if len(hits) > 1:
                    log(name, DeliveryState.UNKNOWN, f"{len(hits)} records carry msg_id {msg_id}: not unique, not trusting either",
                        hits=hits)
                    return True
                if ours:
                    h = ours[0]
                    log(name, DeliveryState.IN_TURN,
                        f"{name} record at .{h['where']} has our msg_id and {wire.pid_field} {me_pid}",
                        **{name: str(path)}, record=h)
                else:
                    log(name, DeliveryState.UNKNOWN,
                        f"a record has our msg_id but {wire.pid_field} {wire.sender_pid(hits[0])} is not ours ({me_pid})",
                        record=hits[0])
                return True
            if not held:  # the furthest state the receiver's own file proves, and no further
                if holding:
                    held = True
                    log(name, DeliveryState.QUEUED,
                        f"{name} holds it: a record ({holding[0]['where']}) carries exactly this payload; no turn "
                        "has taken it yet (such a record names no sender)", **{name: str(where)}, record=holding[0])
            return None

        def progress(_left: float) -> None:
            log.progress(f"waiting for {target.spec}'s {name} to show msg_id {msg_id[:8]}…")

        # 0.1 s, growing by half to CONFIRM_POLL_MAX: a receiver that takes the message at once is seen as
        # soon as before; one busy for seconds (16 sessions on 2 CPUs) is read 5 times a second, not 10
        if await poll_until(check, timeout=timeout, interval=0.1, max_interval=CONFIRM_POLL_MAX,
                            progress=progress) is None:
            delivery.reason = (f"queued: {target.spec}'s {name} holds exactly this payload (queue-operation enqueue), "
                               f"no turn has taken it after {timeout:.0f}s (a busy receiver takes it at its next tool "
                               "boundary or turn); do not re-send" if held else
                               f"written, but no {name} record with msg_id {msg_id} after {timeout:.0f}s "
                               "(a busy receiver takes it at its next tool boundary or turn); do not re-send")


INLINE_READ = 256 * 1024
"""A confirm poll reads the receiver's record on the event loop when the file grew by at most this
since the last poll (a few records: tens of µs), else in a worker thread. Why: the thread hop cost
relay more CPU than the read it carried (issue 33: ~0.4 ms profiled a poll on the event loop)."""


def _size(path: Path | str) -> int:
    """The file's size now; a file that is gone counts as too big to read here (the next poll hops)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 1 << 62


class SocketMessageTransport(SocketTransport):
    """A delivery the receiver can answer natively: the kind's peer-message wrapper names the
    operator's listed inbox as the reply address."""

    @classmethod
    def from_context(cls, ctx: TransportContext) -> SocketMessageTransport:
        """The `relay_repl.transports` entry point's factory."""
        return cls(ctx.name, ctx.inbox, ctx.registration, interrupt=ctx.interrupt, defer=True)

    def __init__(self, name: str, inbox: Callable[[], Any] | None = None,
                 registration: Callable[[], Any] | None = None, **kw: Any) -> None:
        super().__init__(name, inbox, **kw)
        self._registration = registration or (lambda: None)

    def _peer_label(self) -> str:
        wire = self._kind.transports.socket_wire()
        return wire.peer_label if wire is not None else self._kind.facts.label

    def _reply_tool(self, target: Target) -> str:
        return self.way_of(target).reply_tool

    def refusal(self, target: Target) -> str | None:
        base = super().refusal(target)
        if base:
            return base
        reg = self._registration()
        if reg is None:
            return (f"the operator inbox is not listed as a {self._peer_label()} peer: "
                    "run `await session.register_inbox()` first")
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
            raise TransportError(f"the operator inbox is no longer listed as a {self._peer_label()} peer: nothing written")
        return str(reg.socket_path)

    def payload(self, envelope: Envelope) -> str:
        """The kind's native wrapper around the envelope, naming the listed inbox as the reply
        address: exactly the `content` the receiver gets."""
        reg = self._registration()
        wire = self._kind.transports.socket_wire()
        if reg is None or wire is None:  # refusal() keeps this transport out of any plan then
            raise TransportError(f"{self.name} needs the operator inbox listed: `await session.register_inbox()`")
        return wire.wrap(envelope.compose(), reg)

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        return (super().delivered_when(target, envelope)
                + f"; the wrapper in payload 3 lets the receiver answer with {self._reply_tool(target)}")
