"""The operator's own inbox: a unix socket the REPL listens on while it runs.

Why: you cannot ask for a reply without an address (seed section 1). Claude
sessions answer natively with SendMessage to a listed peer; Codex agents, which
cannot send natively, run one line, `relay reply <relay-id> <text>`, which
writes here. Both speak the Claude inbox wire format (newline-delimited JSON,
`{"type":"user","message":{"content":...},"msg_id":...,"from":...}`).

What the inbox trusts: only what the kernel says. Each connection's peer pid
comes from SO_PEERCRED and its start time from /proc, exactly like Claude's
own `verifiedPeerPid`; `from`, names and wrappers are recorded as claims.

Rules applied to every arriving relay line (seed section 9): a repeated id is
logged as a duplicate and not surfaced as new; our own id coming back to us is
a duplicate too; `relay-halt` halts at once.

Every kept message gets a verdict from its peer pid (agents.origin) and, when
its header's `re=` names an id sent from this ledger, the id it answers. The
session links it to the delivery (`on_message` callbacks); nothing is ever
linked by reading the body.

Each running inbox is described by `<state>/inbox/<pid>.json` so that
`relay reply` can find it and so that the next start can clean up after a
crash (a record whose pid is gone or whose start time differs is stale).
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.system.proc import proc_start, same_process
from relay_repl.core.envelope import Envelope, contains_halt
from relay_repl.core.errors import EnvelopeError, RelayError, TransportError
from relay_repl.core.inbound import InboundMessage, Verdict
from relay_repl.store.ledger import InboxMessage, Ledger
from relay_repl.store.paths import state_dir

MAX_LINE = 1_048_576
WRAPPER = re.compile(
    r"^<cross-session-message(?P<attrs>[^>]*)>\n?(?P<body>.*?)\n?</cross-session-message>\s*$", re.DOTALL
)
ATTR = re.compile(r'([\w-]+)="([^"]*)"')


def peer_cred(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the connected peer, from the kernel."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", raw)


class InboxRecord(BaseModel):
    """What `<state>/inbox/<pid>.json` says about one running inbox."""

    model_config = ConfigDict(extra="ignore")

    pid: int
    proc_start: str
    address: str
    sender: str
    socket: str
    started: float
    extra_sockets: list[str] = Field(default_factory=list)
    owned_files: list[str] = Field(default_factory=list, description="files written into other programs' registries")

    @property
    def live(self) -> bool:
        return same_process(self.pid, self.proc_start)[0]  # the one liveness rule: a zombie is dead


def inbox_dir() -> Path:
    d = state_dir() / "inbox"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def read_records() -> list[InboxRecord]:
    out = []
    for f in sorted(inbox_dir().glob("*.json")):
        try:
            out.append(InboxRecord.model_validate_json(f.read_text()))
        except (OSError, ValueError):
            continue
    return out


def clean_stale(echo: Callable[[str], None] | None = None) -> list[InboxRecord]:
    """Remove what crashed inboxes left: their sockets, their registry entries.

    Only files named in a stale record are touched, and only when they are not
    in use by a live process (a socket that still accepts is left alone).
    """
    removed = []
    for rec in read_records():
        if rec.live:
            continue
        for path in [rec.socket, *rec.extra_sockets, *rec.owned_files]:
            _remove_if_ours(path, rec)
        try:
            (inbox_dir() / f"{rec.pid}.json").unlink()
        except FileNotFoundError:
            pass
        removed.append(rec)
        if echo:
            echo(f"cleaned the inbox left by crashed relay pid {rec.pid} ({rec.socket})")
    return removed


def _remove_if_ours(path: str, rec: InboxRecord) -> None:
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        return
    if p.suffix == ".json" and p.name.split(".")[0].isdigit():
        # a registry record we wrote: only remove it while it still names our dead pid
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            data = {}
        if data.get("pid") != rec.pid:
            return
    if p.is_socket():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            s.connect(str(p))
            return  # somebody listens there now: not ours to remove
        except OSError:
            pass
        finally:
            s.close()
    try:
        p.unlink()
    except OSError:
        pass


def find_inbox(relay_id: str | None = None) -> InboxRecord:
    """The live inbox a reply should go to: the one whose address prefixes the
    relay id, else the only live one. Refuses to guess between several."""
    live = [r for r in read_records() if r.live]
    if relay_id:
        owners = [r for r in live if relay_id.startswith(r.address + "-")]
        if len(owners) == 1:
            return owners[0]
    if len(live) == 1:
        return live[0]
    if not live:
        raise RelayError(f"no relay REPL inbox is running under {state_dir()}; start `relay` (or set RELAY_HOME to the operator's)")
    raise RelayError(
        f"{len(live)} relay inboxes are running and none owns {relay_id!r}: pass the relay id you are answering"
    )


def parse_content(content: str) -> tuple[str, dict[str, str]]:
    """Strip a `<cross-session-message ...>` wrapper (as native SendMessage adds),
    returning the body and the wrapper's attributes, which are claims only."""
    m = WRAPPER.match(content)
    if not m:
        return content, {}
    return m.group("body").strip(), dict(ATTR.findall(m.group("attrs")))


class Inbox:
    """Listens on a unix socket; every frame becomes an inbox message or event."""

    def __init__(self, ledger: Ledger, address: str, sender: str, echo: Callable[[str], None] | None = None,
                 judge: Callable[[dict[str, Any], str | None], Verdict] | None = None) -> None:
        """`judge(origin, claim)` gives each message its verdict (default: agents.origin
        against this process's environment, built on first use)."""
        self.ledger = ledger
        self._judge = judge
        self.on_message: list[Callable[[InboundMessage], None]] = []
        self.address = address
        self.sender = sender
        self.echo = echo or (lambda s: None)
        self.path = inbox_dir() / f"{os.getpid()}.sock"
        self.extra_paths: list[Path] = []
        self.owned_files: list[str] = []
        self._listeners: list[Any] = []
        self._tg: Any = None
        self._scopes: list[Any] = []
        self.received: list[InboxMessage] = []
        self.receipts: list[dict[str, Any]] = []

    @property
    def record_path(self) -> Path:
        return inbox_dir() / f"{os.getpid()}.json"

    def _write_record(self) -> None:
        rec = InboxRecord(
            pid=os.getpid(),
            proc_start=proc_start(os.getpid()) or "",
            address=self.address,
            sender=self.sender,
            socket=str(self.path),
            started=time.time(),
            extra_sockets=[str(p) for p in self.extra_paths],
            owned_files=self.owned_files,
        )
        tmp = self.record_path.with_suffix(".json.tmp")
        tmp.write_text(rec.model_dump_json())
        tmp.replace(self.record_path)

    async def listen(self, task_group: Any = None, path: Path | None = None) -> Path:
        """Bind and serve one listening socket (the default, or an extra one).
        Extra sockets are served in the task group the first one was."""
        import anyio

        self._tg = task_group = task_group or self._tg
        target = Path(path) if path else self.path
        if target.exists() or target.is_symlink():
            target.unlink()
        listener = await anyio.create_unix_listener(target)
        os.chmod(target, 0o600)
        self._listeners.append(listener)
        if path:
            self.extra_paths.append(target)
        self._write_record()
        task_group.start_soon(self._serve, listener)
        return target

    async def _serve(self, listener: Any) -> None:
        import anyio

        with anyio.CancelScope() as scope:
            self._scopes.append(scope)
            await listener.serve(self._handle)

    def own_file(self, path: str) -> None:
        """Remember a file written into another program's registry, for cleanup."""
        self.owned_files.append(path)
        self._write_record()

    async def close(self) -> None:
        for scope in self._scopes:  # stop serving before closing what is served
            scope.cancel()
        for lst in self._listeners:
            try:
                await lst.aclose()
            except Exception:
                pass
        for p in [self.path, *self.extra_paths, *map(Path, self.owned_files)]:
            try:
                p.unlink()
            except OSError:
                pass
        try:
            self.record_path.unlink()
        except OSError:
            pass

    async def _handle(self, stream: Any) -> None:
        import anyio
        from anyio.abc import SocketAttribute
        from anyio.streams.buffered import BufferedByteReceiveStream

        async with stream:
            raw_sock = stream.extra(SocketAttribute.raw_socket)
            pid, uid, _gid = peer_cred(raw_sock)
            origin_base = {"verifiedPeerPid": pid, "verifiedPeerUid": uid, "verifiedPeerProcStart": proc_start(pid)}
            buf = BufferedByteReceiveStream(stream)
            with anyio.move_on_after(30):
                while True:
                    try:
                        line = await buf.receive_until(b"\n", MAX_LINE)
                    except (anyio.EndOfStream, anyio.IncompleteRead):
                        break
                    except anyio.DelimiterNotFound:
                        self.ledger.event("inbox-oversize", data=origin_base)
                        break
                    self._frame(line, origin_base)

    def _frame(self, line: bytes, origin_base: dict[str, Any]) -> None:
        try:
            frame = json.loads(line)
        except ValueError:
            self.ledger.event("inbox-garbage", data={**origin_base, "bytes": len(line)})
            return
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return
        kind = frame["type"]
        if kind == "auth":
            return
        if kind == "control":
            self.receipts.append(frame)
            self.ledger.event("receipt", data={**origin_base, "frame": frame})
            status = frame.get("status") or frame.get("state") or frame.get("action")
            self.echo(f"inbox: receipt {frame.get('action')} {status} for {frame.get('orig_msg_id')}")
            return
        if kind != "user":
            return
        content = (frame.get("message") or {}).get("content")
        if not isinstance(content, str) or not content:
            return
        body, claims = parse_content(content)
        origin = {
            **origin_base,
            "kind": "peer",
            "from": frame.get("from", "unknown"),
            "msg_id": frame.get("msg_id"),
            "claims": claims,
        }
        self.accept(body, origin)

    def judge(self, origin: dict[str, Any], claim: str | None) -> Verdict:
        if self._judge is None:
            from relay_repl.agents.origin import OriginJudge

            self._judge = OriginJudge.default().judge
        try:
            return self._judge(origin, claim)
        except Exception as exc:  # a registry mid-write must not lose the message: judge it unknown
            return Verdict(verdict="unknown process", pid=origin.get("verifiedPeerPid"), claim=claim,
                           detail=f"could not be judged ({type(exc).__name__}: {exc})")

    def accept(self, line: str, origin: dict[str, Any]) -> InboxMessage | None:
        """Apply the loop rules to one arriving line, judge its origin, and keep it."""
        try:
            env = Envelope.parse(line)
        except EnvelopeError as exc:
            env = None
            origin = {**origin, "malformed": str(exc)}
        relay_id = env.id if env else None
        claims = origin.get("claims") or {}
        frame_from = origin.get("from")
        claim = env.sender if env else (claims.get("from-name") or (frame_from if frame_from not in (None, "unknown") else None))
        peer = claim
        pid = origin.get("verifiedPeerPid")
        if env is not None and env.id.startswith(self.address + "-"):
            self.ledger.event("duplicate", relay_id=env.id, data={"origin": origin, "line": line, "why": "our own id came back"})
            self.echo(f"inbox: our own relay id {env.id} came back (pid {pid}): duplicate, logged, not acted on")
            return None
        if env is not None and not self.ledger.mark_seen(env.id, env.hop, peer):
            self.ledger.event("duplicate", relay_id=env.id, data={"origin": origin, "line": line})
            self.echo(f"inbox: duplicate relay id {env.id} from pid {pid}: logged, not acted on")
            return None
        verdict = self.judge(origin, claim)
        answers = env.re if env is not None and env.re and self.ledger.was_sent(env.re) else None
        msg = self.ledger.add_inbox(line, origin=origin, relay_id=relay_id, peer=peer, answers=answers, verdict=verdict,
                                    hop=env.hop if env else None)
        self.received.append(msg)
        self.ledger.event("inbox", relay_id=relay_id, data={"seq": msg.seq, "origin": origin, "answers": answers,
                                                             "re": env.re if env else None,
                                                             "verdict": verdict.model_dump(mode="json")})
        if answers:
            self.ledger.event("reply", relay_id=answers, data={"seq": msg.seq, "reply_id": relay_id, "line": line,
                                                               "verdict": verdict.verdict, "session": verdict.session,
                                                               "pid": pid})
        link = f"re {answers}" if answers else ("unlinked: re=" + env.re + " names nothing sent here"
                                                 if env is not None and env.re else "unlinked")
        who = f"{peer or '?'} [{verdict.verdict}: pid {pid}" + (f" is {verdict.session}" if verdict.session else "") + "]"
        self.echo(f"inbox ← {who} ({link}): {line}")
        if contains_halt(line):
            self.ledger.halt(f"relay-halt received from {who}", by=str(peer))
            self.echo("inbox: relay-halt received: every send and every wait is stopped until `session.unhalt()`")
        for callback in list(self.on_message):
            callback(msg)
        return msg


def send_frames(path: str, frames: list[dict[str, Any]], timeout: float = 5.0) -> None:
    """Write NDJSON frames to a unix socket, half-close, read to EOF (blocking)."""
    data = b"".join(json.dumps(f, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for f in frames)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
    except FileNotFoundError:
        raise TransportError(f"inbox socket {path} does not exist: is the relay REPL still running?") from None
    except ConnectionRefusedError:
        raise TransportError(f"inbox socket {path} refused the connection: its REPL is gone (stale socket)") from None
    except OSError as exc:
        raise TransportError(f"could not write to {path}: {exc}") from None
    finally:
        s.close()


def user_frame(text: str, sender_tag: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "msg_id": str(uuid.uuid4()),
        "from": sender_tag,
    }
