"""What reached the operator's inbox: the line, who the kernel says sent it, what it answers.

Why a message carries a verdict and not just a sender: `from=` (the envelope's,
the socket frame's, a `<cross-session-message from-name=...>` wrapper's) is
whatever the connecting process chose to write. The only authenticated fact is
the peer pid the kernel reports for the connection (SO_PEERCRED) plus that
pid's start time. So every inbound message is judged: which discovered session
that process is (or ran it), the claim it made, and one of

- `verified`        the process is (or was started by) the session it claims to be;
- `mismatch`        it claimed one session but connected as another process;
- `host verified`  the process is (or was started by) a host of several sessions (a shared
                  Codex daemon hosts every thread): the pid proves the host, not which of its
                  sessions answered, and nothing else named the one; never linked as an answer;
- `unknown process` the process is no discovered session and claims none we know;
- `receiver's own record` no process connected at all: the answer is the target's own
                  final message, read from its transcript/rollout where the harness
                  recorded it (a turn reply, agents.turn_reply), tied to our message by
                  an id the model never sees.

Why `answers` is separate from the body: a reply is linked to the delivery it
answers by its header field `re=` only (core.envelope), so a body that quotes
another id can never re-attach it. A message whose `re=` names nothing we sent
(or that has none) is `unlinked`.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.readable import Readable

from relay_repl.core.controls import gist, visible
from relay_repl.core.peertext import consent_flag

VerdictKind = Literal["verified", "host verified", "mismatch", "unknown process", "receiver's own record"]
OK_VERDICTS: tuple[VerdictKind, ...] = ("verified", "receiver's own record")
"""The verdicts that establish an answer as the asked session's own (`Verdict.ok`)."""


class Verdict(Readable, BaseModel):
    """Who sent an inbound message, judged from the kernel's peer pid."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    verdict: VerdictKind
    pid: int | None = Field(default=None, description="the connecting process (SO_PEERCRED)")
    proc_start: str | None = Field(default=None, description="its start time, field 22 of /proc/<pid>/stat")
    claim: str | None = Field(default=None, description="who the message said it was from (a claim)")
    session: str | None = Field(default=None, description="the discovered session the process is, e.g. claude:alpha")
    session_pid: int | None = Field(default=None, description="that session's own process (agent or daemon)")
    chain: tuple[int, ...] = Field(default=(), description="pids from the connecting process up to the session's")
    detail: str = ""
    said_by: str | None = Field(default=None, description="whose judgement this is when not this relay's own: "
                                "`host H` for a verdict a host's relay gave (shown as `host H says: ...`)")

    @property
    def shown(self) -> str:
        """The verdict as the operator reads it: a host's as the host's word, never as relay's own."""
        if self.said_by:
            return f"{self.said_by} says: {self.verdict}" + (f" by pid {self.pid}" if self.pid is not None else "")
        return self.verdict

    @property
    def ok(self) -> bool:
        return self.verdict in OK_VERDICTS

    def __str__(self) -> str:
        who = f"{self.session} (pid {self.session_pid})" if self.session else "no discovered session"
        via = f" via pid {self.pid}" if self.pid is not None and self.pid != self.session_pid else ""
        return f"{self.shown}: claimed {self.claim or 'nothing'}; connected as {who}{via}" + (
            f" — {self.detail}" if self.detail else "")


class InboundMessage(Readable, BaseModel):
    """One message kept in the operator's inbox (the ledger's `inbox` table)."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    seq: int
    at: float
    relay_id: str | None
    peer: str | None
    line: str
    origin: dict[str, Any]
    answers: str | None = Field(default=None, description="the relay id of OUR delivery it answers (its re=), else None")
    verdict: Verdict | None = None
    hop: int | None = None

    @property
    def linked(self) -> bool:
        return self.answers is not None

    @property
    def body(self) -> str:
        """The text after the envelope header (the whole line when there is none)."""
        from relay_repl.core.envelope import Envelope

        try:
            env = Envelope.parse(self.line)
        except ValueError:
            return self.line
        return env.body if env else self.line

    @property
    def text(self) -> str:
        """The message's words (its body, without the envelope header); the same as `.body`.
        Raw as the peer wrote them: print it through `relay_repl.core.controls.visible`."""
        return self.body

    @property
    def sender(self) -> str:
        """Who sent it, as far as relay knows: the session the kernel's pid proved for a verified
        message, else the sender it claimed (marked so), else '?'."""
        v = self.verdict
        if v is not None and v.ok and v.session:
            return v.session
        return f"{self.peer} (claimed)" if self.peer else "?"

    def __repr__(self) -> str:
        """Who, verdict, what it answers, then its words (neutralised, cut at the end): what an
        operator reads a message for, in that order (issue 39: the header used to fill the line)."""
        when = time.strftime("%H:%M:%S", time.localtime(self.at))
        link = f"re {self.answers}" if self.answers else "unlinked"
        verdict = self.verdict.shown if self.verdict else "no verdict"
        pid = None if self.verdict and self.verdict.said_by else self.origin.get("verifiedPeerPid")  # a host's: in `shown`
        words = gist(self.body, REPR_WORDS)
        flag = consent_flag(self.body)
        return visible(f"<InboxMessage #{self.seq} {when} from {self.sender} [{verdict}{f', pid {pid}' if pid else ''}] "
                       f"{link}{' FLAG: ' + flag if flag else ''}: \"{words}\">")


REPR_WORDS = 160  # a message's words in its repr; `.text` holds them all


class PeerIdentity(BaseModel):
    """A discovered session that a process is, as one agent module judged it.

    `claimable` holds every string a genuine message from this session may
    claim as its sender address (a Claude session's name and socket, a Codex
    thread's id and name); the verdict compares the claim against it.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    kind: str
    spec: str = Field(description="how the operator names it, e.g. claude:alpha")
    pid: int = Field(description="the session's own process (Claude's pid, the Codex thread's lock holder)")
    claimable: frozenset[str] = frozenset()
    evidence: str = ""
    specs: dict[str, str] = Field(default_factory=dict,
                                  description="claimable string -> spec, when one process hosts several sessions")
    host_only: bool = Field(default=False, description="the process hosts several sessions (a shared daemon): "
                            "its pid proves the host, not which session acted")


class ToolCall(BaseModel):
    """What a session's own record must hold to prove that it, of all the sessions one host
    process runs, made a call: the relay tool and what it was called with.

    Why: a shared host (Codex's daemon) runs every thread's tools, so the kernel pid of a
    `relay reply` or `relay mcp` process names the host only; an environment variable
    such as CODEX_THREAD_ID is set by whoever starts the command, so it is a claim. The
    thread's own rollout, written by the host as the model made the call, is evidence.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    tool: Literal["relay_reply", "relay_requests", "relay_send", "relay_request_status"]
    relay_id: str | None = Field(default=None, description="the id answered (relay_reply)")
    text: str | None = Field(default=None, description="the answer's body (relay_reply) or the words asked to be sent "
                             "(relay_send), whitespace-normalised")


def claim_address(claim: str | None) -> str | None:
    """The address part of a claim: `role:agent@addr` -> addr, `uds:/p` -> /p, else the claim."""
    if not claim:
        return None
    if claim.startswith("uds:"):
        return claim[4:]
    role, sep, rest = claim.partition(":")
    if sep and "@" in rest:
        return rest.partition("@")[2]
    return claim


class Receipt(BaseModel):
    """A control frame (a Claude receipt or notice) that reached the operator's inbox, with
    the one authenticated fact about it: the connecting process (SO_PEERCRED pid and start).

    Why kept apart from the frame: `status: delivered` or `dropped` in a frame is a claim any
    local process can write to the inbox socket; only a frame whose connection came from the
    delivery's receiver may move that delivery's state (issue 16 case 2).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    frame: dict[str, Any]
    pid: int | None = Field(default=None, description="the connecting process (SO_PEERCRED)")
    proc_start: str | None = Field(default=None, description="its start time, field 22 of /proc/<pid>/stat")
    at: float = Field(default_factory=time.time)

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the frame (a claim)."""
        return self.frame.get(key, default)

    def sent_by(self, pid: int | None, proc_start: str | None) -> tuple[bool, str]:
        """Whether this frame's connection came from process (`pid`, `proc_start`), and why."""
        if pid is None or proc_start is None:
            return False, "the receiver's pid and start time are not known, so no sender can be verified as it"
        if self.pid != pid:
            return False, f"sent by pid {self.pid}, not by the receiver (pid {pid})"
        if self.proc_start != str(proc_start):
            return False, f"sent by pid {pid} started at {self.proc_start}, not the receiver started at {proc_start}"
        return True, f"sent by the receiver (pid {pid}, procStart {proc_start})"


class OriginRecord(BaseModel):
    """One record in a receiver's file carrying the relay id asked for, with its origin."""

    model_config = ConfigDict(defer_build=True)  # built on first use, off the targets path

    offset: int = Field(description="byte offset of the record's line in the file")
    type: str | None = Field(description="the record's type (user, attachment, ...)")
    path: str = Field(description="where the origin sits in the record, e.g. `origin` or `attachment.origin`")
    origin: dict[str, Any]
    content: str = Field(description="the message text the record holds, as the model saw it")
    header: dict[str, str] = Field(description="the decoded envelope header fields (from, to, id, hop, want, ...)")
    timestamp: str | None = None
