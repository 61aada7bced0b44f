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

Crash cleanup never removes a file it cannot prove it wrote: pids are reused
(a live Claude session can hold the very pid a crashed REPL had, and with it
the same `sessions/<pid>.json` and `<pid>.sock` names), so a name or a pid is
no proof. The record keeps a stamp of every file the inbox created (device,
inode, and for a regular file the sha256 of the exact bytes written); a file
is removed only while it still matches its stamp and, when it carries a
`procStart`, names the crashed process's full identity (pid AND start time).
Only the REPL's start, `relay send` and `relay clean` clean; read-only
commands never do. A file outside relay's own inbox directory (a record in
Claude's registry, a socket in a Claude session's socket directory) is another
program's directory: it is unlinked only under an approval of the plan that names
it (`clean_plan`, asked by `session.clean()` / `relay clean`); without one it is
left, the record is kept, and the line says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.system.proc import proc_start, same_process
from relay_repl.core.approval import Approval, check
from relay_repl.core.controls import safe_echo, visible
from relay_repl.core.envelope import Envelope, contains_halt
from relay_repl.core.peertext import consent_acts, consent_flag
from relay_repl.core.errors import EnvelopeError, NoApproval, TransportError, describe
from relay_repl.core.plan import Plan
from relay_repl.core.request import ANSWER_TYPE as REQUEST_ANSWER, FRAME_TYPE as REQUEST_FRAME
from relay_repl.core.inbound import InboundMessage, Receipt, ToolCall, Verdict
from relay_repl.store.ledger import InboxMessage, Ledger
from relay_repl.store import paths
from relay_repl.session.core.inbox_find import choose
from relay_repl.session.core.inbox_find import user_frame as user_frame  # re-exported: its home is inbox_find
from relay_repl.system.wire import LineTooLong, peer_cred, read_lines
from relay_repl.system.wire import send_frames as send_frames  # re-exported: its home is system.wire

MAX_LINE = 1_048_576
WRAPPER = re.compile(
    r"^<cross-session-message(?P<attrs>[^>]*)>\n?(?P<body>.*?)\n?</cross-session-message>\s*$", re.DOTALL
)
ATTR = re.compile(r'([\w-]+)="([^"]*)"')


class FileStamp(BaseModel):
    """Proof that a file is the one we created: its inode and inode change time (an
    inode number alone is reused at once: unlink a socket, bind another, same number),
    and for a regular file the digest of the bytes we wrote."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    dev: int
    ino: int
    ctime_ns: int
    sha256: str | None = None

    def same_inode(self, other: FileStamp) -> bool:
        return (self.dev, self.ino, self.ctime_ns) == (other.dev, other.ino, other.ctime_ns)

    @classmethod
    def of(cls, path: str | Path) -> FileStamp | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        digest = None
        if stat.S_ISREG(st.st_mode):
            try:
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                return None
        return cls(dev=st.st_dev, ino=st.st_ino, ctime_ns=st.st_ctime_ns, sha256=digest)


def _bound_unix(path: Path) -> socket.socket:
    """A listening UNIX socket at `path`, bound here rather than by `anyio.create_unix_listener`,
    which binds in a worker thread: starting the thread pool for it was ~12 ms before a send's
    plan, and a bind in relay's own local state directory does not block."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        sock.listen(65536)  # anyio's default backlog (the kernel caps it at somaxconn)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class InboxRecord(BaseModel):
    """What `<state>/inbox/<pid>.json` says about one running inbox."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    pid: int
    proc_start: str
    address: str
    sender: str
    socket: str
    started: float
    extra_sockets: list[str] = Field(default_factory=list)
    owned_files: list[str] = Field(default_factory=list, description="files written into other programs' registries")
    stamps: dict[str, FileStamp] = Field(default_factory=dict, description="path -> proof we created it")

    @property
    def live(self) -> bool:
        return same_process(self.pid, self.proc_start)[0]  # the one liveness rule: a zombie is dead


def inbox_dir(create: bool = True) -> Path:
    """Where running inboxes keep their socket and record; made only by one that opens (store/paths.py)."""
    return paths.inbox_dir(create=create)


def read_records() -> list[InboxRecord]:
    """The inbox records on disk; reading makes no directory (`relay whoami` is read-only)."""
    out = []
    for f in sorted(inbox_dir(create=False).glob("*.json")):
        try:
            out.append(InboxRecord.model_validate_json(f.read_text()))
        except (OSError, ValueError):
            continue
    return out


def _foreign(path: str) -> bool:
    """A file outside relay's own inbox directory: another program's directory."""
    return Path(path).parent.resolve() != inbox_dir().resolve()


def _leftovers(rec: InboxRecord) -> list[str]:
    return list(dict.fromkeys([rec.socket, *rec.extra_sockets, *rec.owned_files]))


def clean_plan() -> Plan | None:
    """The plan for unlinking what crashed inboxes left in other programs' directories
    (only files that provably are relay's, as `_remove_if_ours` checks), or None."""
    files = [(p, rec.pid) for rec in read_records() if not rec.live for p in _leftovers(rec)
             if _foreign(p) and _remove_if_ours(p, rec, dry=True) is None]
    if not files:
        return None
    pids = sorted({pid for _, pid in files})
    return Plan(action="remove what crashed relay processes left in other programs' directories",
                target=f"files of crashed relay pid(s) {', '.join(map(str, pids))}",
                identified_by="their inbox records: process (pid and start time) gone; each file still matches "
                              "the stamp relay took when it created it",
                transport="unlink", payload="unlink " + " ".join(p for p, _ in files),
                delivered_when="the files are gone (each is re-checked right before it is unlinked)",
                files=tuple(f"removes {p} (left by crashed relay pid {pid})" for p, pid in files))


def clean_stale(echo: Callable[[str], None] | None = None, approval: Approval | None = None) -> list[InboxRecord]:
    """Remove what crashed inboxes left: their sockets, their registry entries.

    A record is stale when its process (pid AND start time) is gone. Of the files
    it names, only those still matching the stamp taken when we created them are
    removed (see the module doc); every removal, and every file left because it
    is not provably ours, is reported through `echo` (the CLI sends it to stderr).
    A file in another program's directory is removed only under `approval` (the
    gate's yes to `clean_plan()`); without it the file and its record are kept.
    """
    removed = []
    say = echo or (lambda line: None)
    for rec in read_records():
        if rec.live:
            continue
        kept = False
        gone: list[str] = []  # said in the one line for this record (issue 39: a crash cleaned was two lines)
        for path in _leftovers(rec):
            if _foreign(path) and _remove_if_ours(path, rec, dry=True) is None:
                try:
                    check(approval, what=f"unlinking {path}", file=path)
                except NoApproval:
                    kept = True
                    say(f"left {path} (left by crashed relay pid {rec.pid}): not removed without the operator's "
                        "approval (`relay clean` shows the plan and asks)")
                    continue
            why_not = _remove_if_ours(path, rec)
            if why_not is None:
                gone.append(f"removed {path}")
            elif why_not:
                say(f"left {path}: {why_not}")
        if kept:
            if gone:
                say(f"after crashed relay pid {rec.pid}: {'; '.join(gone)}")
            continue
        try:
            (inbox_dir(create=False) / f"{rec.pid}.json").unlink()
        except FileNotFoundError:
            pass
        removed.append(rec)
        say(f"cleaned the inbox left by crashed relay pid {rec.pid}: " + ("; ".join(gone) if gone else
                                                                           f"its record ({rec.socket} was gone)"))
    return removed


def _remove_if_ours(path: str, rec: InboxRecord, *, dry: bool = False) -> str | None:
    """Unlink `path` if it provably is what `rec`'s process created; else say why not
    ("" when there is nothing there). `dry`: only say whether it would."""
    p = Path(path)
    now = FileStamp.of(p)
    if now is None:
        return ""
    made = rec.stamps.get(path)
    if made is None:
        return "no record that this relay created it"
    if not now.same_inode(made):
        return "replaced since (another file now has that name)"
    if made.sha256 is not None and now.sha256 != made.sha256:
        return "rewritten since (its bytes are not the ones relay wrote)"
    if p.suffix in (".json", ".key"):
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            data = {}
        if isinstance(data, dict) and "procStart" in data and data.get("procStart") != rec.proc_start:
            return f"names another process (procStart {data.get('procStart')}, ours was {rec.proc_start})"
        if isinstance(data, dict) and "pid" in data and data.get("pid") != rec.pid:
            return f"names another process (pid {data.get('pid')})"
    if stat.S_ISSOCK(os.lstat(p).st_mode):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            s.connect(str(p))
            return "somebody listens there now"
        except OSError:
            pass
        finally:
            s.close()
    if dry:
        return None
    try:
        p.unlink()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot remove it ({exc.strerror})"
    return None


def find_inbox(relay_id: str | None = None) -> InboxRecord:
    """The live inbox a reply should go to (the rule: `inbox_find.choose`)."""
    return choose([r for r in read_records() if r.live], relay_id)


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
                 judge: Callable[[dict[str, Any], str | None], Verdict] | None = None, origin: Any = None) -> None:
        """`judge(origin, claim)` gives each message its verdict (default: `origin`, an
        agents.origin.OriginJudge, else one over this process's environment built on first use)."""
        self.ledger = ledger
        self._judge = judge
        self._origin: Any = origin
        self.on_message: list[Callable[[InboundMessage], None]] = []
        # an agent's request to send (frame `relay-request`): the session's requests part takes it
        # and gives the one-line answer written back on the same connection (session/core/requests.py)
        self.on_request: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None
        self.address = address
        self.sender = sender
        self.echo = safe_echo(echo) if echo else (lambda s: None)  # a peer's line never reaches a terminal raw
        self.path = paths.inbox_socket(os.getpid())
        self.extra_paths: list[Path] = []
        self.owned_files: list[str] = []
        self.stamps: dict[str, FileStamp] = {}
        self._listeners: list[Any] = []
        self._tg: Any = None
        self._scopes: list[Any] = []
        self.received: list[InboxMessage] = []
        self.receipts: list[Receipt] = []

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
            stamps=self.stamps,
        )
        tmp = self.record_path.with_suffix(".json.tmp")
        tmp.write_text(rec.model_dump_json())
        tmp.replace(self.record_path)

    async def listen(self, task_group: Any = None, path: Path | None = None, approval: Approval | None = None) -> Path:
        """Bind and serve one listening socket (the default, or an extra one).
        Extra sockets are served in the task group the first one was. An extra socket is
        a file in another program's directory: only under an approval whose plan names it."""
        import anyio

        if path is not None:
            check(approval, what=f"creating the socket {path}", file=str(path))
        self._tg = task_group = task_group or self._tg
        target = Path(path) if path else self.path
        if target.exists() or target.is_symlink():
            if path is not None:  # a path in someone else's directory: never unlink what we did not create
                raise TransportError(f"{target} already exists; relay will not replace a file it did not create")
            target.unlink()  # our own inbox dir, named for this pid: a leftover of a dead process
        listener = await anyio.abc.SocketListener.from_socket(_bound_unix(target))
        os.chmod(target, 0o600)
        self._listeners.append(listener)
        if path:
            self.extra_paths.append(target)
        self._stamp(target)
        self._write_record()
        task_group.start_soon(self._serve, listener)
        return target

    async def _serve(self, listener: Any) -> None:
        import anyio

        with anyio.CancelScope() as scope:
            self._scopes.append(scope)
            try:
                await listener.serve(self._handle)
            except* anyio.ClosedResourceError:
                pass  # close() came before this task started serving: the listener is closed, serving is over

    def own_file(self, path: str) -> None:
        """Remember a file written into another program's registry, for cleanup; call it
        right after writing the file (its stamp is the proof the cleanup checks)."""
        self.owned_files.append(path)
        self._stamp(path)
        self._write_record()

    def _stamp(self, path: str | Path) -> None:
        stamp = FileStamp.of(path)
        if stamp is not None:
            self.stamps[str(path)] = stamp

    async def close(self) -> list[str]:
        """Stop listening and remove what this inbox created; returns the files removed (the REPL
        names them when it leaves)."""
        for scope in self._scopes:  # stop serving before closing what is served
            scope.cancel()
        for lst in self._listeners:
            try:
                await lst.aclose()
            except Exception:
                pass
        removed: list[str] = []
        for p in [self.path, *self.extra_paths, *map(Path, self.owned_files)]:
            made, now = self.stamps.get(str(p)), FileStamp.of(p)
            if made is None or now is None or not now.same_inode(made):
                continue  # not the file we created (gone, or replaced by someone else)
            try:
                p.unlink()
                removed.append(str(p))
            except OSError:
                pass
        try:
            self.record_path.unlink()
        except OSError:
            pass
        return removed

    async def _handle(self, stream: Any) -> None:
        import anyio
        from anyio.abc import SocketAttribute

        async with stream:
            raw_sock = stream.extra(SocketAttribute.raw_socket)
            pid, uid, _gid = peer_cred(raw_sock)
            origin_base = {"verifiedPeerPid": pid, "verifiedPeerUid": uid, "verifiedPeerProcStart": proc_start(pid)}
            with anyio.move_on_after(30):
                try:
                    async for line in read_lines(raw_sock, MAX_LINE):  # not stream.receive(): see read_lines
                        answer = self._frame(line, origin_base)
                        if answer is not None:  # an agent's request: held or refused, said on its connection
                            await stream.send(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
                except LineTooLong:
                    self.ledger.event("inbox-oversize", data=origin_base)

    def _frame(self, line: bytes, origin_base: dict[str, Any]) -> dict[str, Any] | None:
        try:
            frame = json.loads(line)
        except (ValueError, RecursionError):  # a nesting bomb is garbage too, never the end of the inbox
            self.ledger.event("inbox-garbage", data={**origin_base, "bytes": len(line)})
            self._halt_in_dropped(line, origin_base)
            return None
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            self._halt_in_dropped(line, origin_base)
            return None
        kind = frame["type"]
        if kind == "auth":
            return None
        if kind == REQUEST_FRAME:
            if self.on_request is None:
                self._halt_in_dropped(line, origin_base)
                return {"type": REQUEST_ANSWER, "state": "refused",
                        "why": "this relay takes no requests (it is not the operator's REPL): nothing is held"}
            return self.on_request(frame, origin_base)
        if kind == "control":  # a claim until the transport that sent orig_msg_id checks who sent it
            self.receipts.append(Receipt(frame=frame, pid=origin_base.get("verifiedPeerPid"),
                                         proc_start=origin_base.get("verifiedPeerProcStart")))
            self.ledger.event("receipt", data={**origin_base, "frame": frame})
            status = frame.get("status") or frame.get("state") or frame.get("action")
            self.echo(visible(f"inbox: receipt {frame.get('action')} {status} for {frame.get('orig_msg_id')} "
                              f"(pid {origin_base.get('verifiedPeerPid')})"))  # one line: a peer's \n starts none
            self._halt_in_dropped(line, origin_base)
            return None
        message = frame.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kind != "user" or not isinstance(content, str) or not content:
            self._halt_in_dropped(line, origin_base)
            return None
        body, claims = parse_content(content)
        origin = {
            **origin_base,
            "kind": "peer",
            "from": frame.get("from", "unknown"),
            "msg_id": frame.get("msg_id"),
            "claims": claims,
        }
        self.accept(body, origin)
        return None

    def _halt_in_dropped(self, line: bytes, origin_base: dict[str, Any]) -> None:
        """A line this inbox keeps no message of (not JSON, another shape, a receipt) that carries
        relay-halt still halts (seed section 9: any message): the safe side; nothing else of it counts."""
        self.ledger.halt_if_carried(line.decode("utf-8", "replace"), where="a line the inbox did not keep as a message",
                                    by=f"pid {origin_base.get('verifiedPeerPid')}")

    def judge(self, origin: dict[str, Any], claim: str | None, call: ToolCall | None = None) -> Verdict:
        """`call` is what the sender's own record should hold (the answer it sent): it can
        prove which of a shared host's sessions sent it (agents.origin)."""
        try:
            if self._judge is not None:
                return self._judge(origin, claim)
            if self._origin is None:
                from relay_repl.agents.origin import OriginJudge

                self._origin = OriginJudge.default()
            return self._origin.judge(origin, claim, call=call)
        except Exception as exc:  # a registry mid-write must not lose the message: judge it unknown
            return Verdict(verdict="unknown process", pid=origin.get("verifiedPeerPid"), claim=claim,
                           detail=f"could not be judged ({describe(exc, 'reading the sender')})")

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
            self.ledger.halt_if_carried(line, where=f"a duplicate of our own id {env.id}", by=str(peer))  # a halt wins
            self.echo(f"inbox: our own relay id {env.id} came back (pid {pid}): duplicate, logged, not acted on")
            return None
        answers = env.re if env is not None and env.re and self.ledger.was_sent(env.re) else None
        call = ToolCall(tool="relay_reply", relay_id=env.re, text=env.body) if env is not None and env.re else None
        verdict = self.judge(origin, claim, call)  # read-only, slow (/proc, records): before the write lock
        if answers:
            verdict = asked_only(verdict, self.ledger.sent_to(answers))
        # the seen mark, the message and its events are one commit (Ledger.one_commit): a crash keeps the
        # message with its mark or neither (then its re-delivery is taken), and nothing is said before it
        with self.ledger.one_commit():
            if env is not None and not self.ledger.mark_seen(env.id, env.hop, peer):
                self.ledger.event("duplicate", relay_id=env.id, data={"origin": origin, "line": line})
                self.ledger.halt_if_carried(line, where=f"a duplicate of {env.id}", by=str(peer))  # a halt wins
                msg = None
            else:
                msg = self.ledger.add_inbox(line, origin=origin, relay_id=relay_id, peer=peer, answers=answers,
                                            verdict=verdict, hop=env.hop if env else None)
                self.ledger.event("inbox", relay_id=relay_id, data={
                    "seq": msg.seq, "origin": origin, "answers": answers, "re": env.re if env else None,
                    "verdict": verdict.model_dump(mode="json")})
                if answers:
                    self.ledger.event("reply", relay_id=answers, data={
                        "seq": msg.seq, "reply_id": relay_id, "line": line, "verdict": verdict.verdict,
                        "session": verdict.session, "pid": pid})
        if msg is None:
            assert env is not None
            self.echo(f"inbox: duplicate relay id {env.id} from pid {pid}: logged, not acted on")
            return None
        self.received.append(msg)
        link = f"re {answers}" if answers else ("unlinked: re=" + env.re + " names nothing sent here"
                                                 if env is not None and env.re else "unlinked")
        who = f"{peer or '?'} [{verdict.verdict}: pid {pid}" + (f" is {verdict.session}" if verdict.session else "") + "]"
        self.echo(visible(f"inbox ← {who} ({link}): {line}"))  # one line: a line break in a peer's text starts none
        if consent_acts(msg.body):  # a peer's ask is never the operator's consent (seed section 9)
            self.echo(f"inbox: #{msg.seq} FLAG: {consent_flag(msg.body)}")
        if contains_halt(line):  # recorded by ledger.add_inbox, the one check; said here
            self.echo("inbox: relay-halt received: every send and every wait is stopped until `session.unhalt()`")
        for callback in list(self.on_message):
            callback(msg)
        return msg


def asked_only(verdict: Verdict, asked: str | None) -> Verdict:
    """An answer is the asked session's only: a verified sender that is another session
    becomes `mismatch: answered by X, asked Y` (seed section 9; issue 16 case 1); a mismatch
    whose process is another session says so first too. `asked` is
    the ledger's record of where the id went; an id a `relay reply` sent (`inbox:<pid>`) was
    asked of nobody."""
    if (verdict.verdict not in ("verified", "mismatch") or not verdict.session or not asked
            or asked.startswith("inbox:") or verdict.session == asked):
        return verdict
    return verdict.model_copy(update={"verdict": "mismatch", "detail": f"answered by {verdict.session}, asked {asked}"
                                      + (f" ({verdict.detail})" if verdict.detail else "")})


