"""The asking agent's side of a request: `relay_send` (MCP) and `relay ask` (a shell) write it into
the operator's inbox; `relay_request_status` / `relay ask --status` read its state back.

Why the request goes through the inbox socket, the path `relay reply` uses, and not straight
into the ledger: the operator's inbox is the one place the asker is judged by what the kernel
says (SO_PEERCRED pid and start time, agents.origin), and the operator's relay is the only one
that may write a request's state. So the asker only asks; the inbox establishes who asks, holds
the request (or refuses it, with why) and writes one line back on the same connection, which is
the answer the tool returns at once: `held for the operator's approval (request R)`, never "sent".

The asking side establishes its caller first, exactly as `relay_reply` does (the session above
this process; of a shared Codex daemon's threads, the one whose rollout holds this call in
flight): when it cannot, nothing is written anywhere and the refusal says why. Two cheap answers
come first (issue 33: each `relay ask` from a shell is one process start, and the judge imports
pydantic and every kind): where every kind's negative rule places this process outside every
session (session/core/outside.py) the refusal is the judge's, without it; where a kind's
standard-library rule names the session this process claims to be (Codex's `$CODEX_THREAD_ID`),
that claim goes to the inbox, which judges it as it judges every request (`_claimed`). Reading a
request's status is allowed to its asker only, established by the judge.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relay_repl.core.errors import DiscoveryError, PolicyRefusal, RelayError, TransportError, UsageError
from relay_repl.core.origin_words import no_session

if TYPE_CHECKING:  # the models load where a request is asked or read: `relay serve` and the operator's
    # commands import this module for `refuse_inside_agent` alone (issue 33)
    from relay_repl.core.envelope import Want
    from relay_repl.core.inbound import ToolCall
    from relay_repl.core.target import Me
    from relay_repl.session.core.whoami import OwnAddress
    from relay_repl.store.ledger import Ledger  # opened where a request is written or read, not for a refusal

WANTS = ("reply", "ack", "none")
ANSWER_TIMEOUT = 20.0
"""Seconds the asking tool waits for the operator's inbox to say held or refused (it judges the
caller from /proc and, for a shared Codex daemon, the thread's rollout: well under a second)."""


def caller(call: ToolCall | Callable[[], ToolCall], pid: int | None = None) -> tuple[str | None, str]:
    """The session this process acts for (its spec) and the evidence, or None and why not. Where
    every kind's cheap rule excludes the ancestry (session/core/outside.py) the answer is the judge's own
    "no session" without the judge, and `call` may be a function that makes it, made only when the
    judge runs (its model is pydantic's)."""
    from relay_repl.session.core.outside import surely_outside_every_session

    pid = os.getpid() if pid is None else pid
    if surely_outside_every_session(pid):
        return None, no_session(pid)
    from relay_repl.agents.origin import OriginJudge

    try:
        return OriginJudge.default().session_of(pid, call if not callable(call) else call())
    except (OSError, RelayError) as exc:
        return None, f"the calling session could not be read ({exc})"


def _agent(spec: str) -> Me:
    from relay_repl.core.target import Me

    kind, _, name = spec.partition(":")
    return Me(role="agent", agent=kind, address=name)


def ask(to: str, body: str, want: str = "reply", *, ledger: Ledger | None = None,
        who: tuple[str | None, str] | None = None, shell: bool = False) -> dict[str, Any]:
    """Ask the operator's relay to send `body` to `to`: the inbox's answer (held, with the request
    id) as a dict. Raises a RelayError (nothing held) when the caller is not established, the
    arguments are wrong, no operator inbox runs or the operator's relay refused it. `shell`: this
    process is the command an agent's shell tool ran (`relay ask`), whose environment its client set
    for that very command, so a kind's rule may read the claim there (`_claimed`); never the MCP
    server's, which a shared host started once for all of its sessions."""
    body = " ".join(str(body).split())  # one line, as an envelope requires
    to = str(to).strip()
    if not to:
        raise UsageError("name the target to send to (`to`), as `relay targets` shows it (kind:name)")
    if not body:
        raise UsageError("the body is empty: pass the one line to send as `body`")
    if want not in WANTS:
        raise UsageError(f"want={want!r}: use reply, ack or none")
    _check_body(body)
    claim = _claimed() if who is None and shell else None
    spec: str | None = None
    if claim is None:
        spec, why = who if who is not None else caller(lambda: _call("relay_send", text=body))
        if spec is None:
            raise PolicyRefusal(f"not held: relay cannot establish which session is asking ({why})")
    from relay_repl.core.envelope_line import HOP_CAP, plain_line
    from relay_repl.core.request_frames import FRAME_TYPE, request_hop
    from relay_repl.session.core.reply import find_inbox

    from relay_repl.store.ledger import Ledger

    led = ledger or Ledger.default()
    try:
        inbox = find_inbox()
        me = claim if claim is not None else _agent(str(spec))
        # the asker's claim (capped, as an envelope's hop is); the operator's relay reckons it again from its own
        # ledger, by the session it judges the asker to be (a claimed address may not be that session's spec)
        hop = min(request_hop(0, led.last_hop_to(spec) if spec is not None else None), HOP_CAP)
        rid = led.next_id(me.address)
    finally:
        if ledger is None:
            led.close()
    line = plain_line(sender=me.sender, to=to, id=rid, hop=hop, want=want, re=None, body=body)
    if line is None:  # the model decides, and its refusal (a `to` it does not take, ...) is the word
        from relay_repl.core.envelope import Envelope

        line = Envelope.make(sender=me.sender, to=to, id=rid, hop=hop, want=_want(want), body=body).compose()
    from relay_repl.system.wire import send_frames

    frame = {"type": FRAME_TYPE, "line": line, "from": f"relay-ask:{me.address}"}
    raw = send_frames(inbox.socket, [frame], timeout=ANSWER_TIMEOUT)
    answer = _answer(raw)
    if answer.get("state") != "held":
        raise PolicyRefusal(str(answer.get("why") or "the operator's relay did not hold the request"))
    rid = str(answer.get("request") or rid)
    return {"text": f"held for the operator's approval (request {rid})", "request": rid, "state": "held", "to": to,
            "want": want,
            **{k: answer[k] for k in ("hop", "expires", "flags") if k in answer}}


def _claimed() -> OwnAddress | None:
    """The agent session this process claims to act for, from the kinds' standard-library rules alone
    (session/core/whoami.py `by_rules`: Codex's `$CODEX_THREAD_ID`), or None: then the origin judge
    establishes the caller here first, as before.

    Why a claim is enough here: the asking side decides nothing. The operator's inbox judges every
    request by the kernel's view of the connecting process (SO_PEERCRED, agents/origin.py) and holds
    it only for the session that process is, and only if the claim is that session's; a wrong claim
    is refused there, with why, and nothing is held. So an agent's `relay ask` need not load the judge
    (pydantic and every kind, ~120 ms of its start, issue 33) to say who it claims to be. A process
    that every kind's cheap rule places outside every session claims nothing (`caller` refuses it in
    the judge's words, nothing written); nor does one only a kind's package could place."""
    from relay_repl.session.core.outside import surely_outside_every_session

    if surely_outside_every_session():
        return None
    from relay_repl.session.core.whoami import by_rules

    got = by_rules()
    return got if got is not None and got.role == "agent" else None


def _check_body(body: str) -> None:
    """`envelope.check_body(body)`: its refusal (too long, a control character) in its words, the
    model loaded only when there is one to say."""
    from relay_repl.core.controls import control_refusal
    from relay_repl.core.envelope_line import MAX_BODY

    if len(body) > MAX_BODY or control_refusal(body) is not None:
        from relay_repl.core.envelope import check_body

        check_body(body)


def _call(tool: str, **fields: str) -> ToolCall:
    """What the caller's own record should hold (agents/origin.py narrows a shared host by it)."""
    from relay_repl.core.inbound import ToolCall

    return ToolCall(tool=tool, **fields)


def _want(want: str) -> Want:
    return "reply" if want == "reply" else "ack" if want == "ack" else "none"


def _answer(raw: bytes) -> dict[str, Any]:
    """The inbox's one-line answer; a missing or garbled one is a refusal (nothing is known held)."""
    from relay_repl.core.request_frames import ANSWER_TYPE

    for line in raw.splitlines():
        try:
            got = json.loads(line)
        except ValueError:
            continue
        if isinstance(got, dict) and got.get("type") == ANSWER_TYPE:
            return got
    raise TransportError("the operator's relay gave no answer to the request (an older relay, or it closed): "
                         "it may not be held; ask the operator, or `relay ask --status ID` later")


def status(request_id: str, *, ledger: Ledger | None = None, who: tuple[str | None, str] | None = None) -> dict[str, Any]:
    """The typed receipt of the caller's own request `request_id`; refused for anyone else's."""
    request_id = str(request_id).strip()
    if not request_id:
        raise UsageError("name the request id (the `request` the ask answered)")
    spec, why = who if who is not None else caller(lambda: _call("relay_request_status", relay_id=request_id))
    if spec is None:
        raise PolicyRefusal(f"refused: relay cannot establish which session is asking ({why}); a request's state "
                            "is shown to its asker only")
    from relay_repl.store.requests import RequestStore

    from relay_repl.store.ledger import Ledger

    led = ledger or Ledger.read_only_default()
    try:
        req = RequestStore(led).get(request_id)
    finally:
        if ledger is None:
            led.close()
    if req is None or req.asker != spec:  # the same words either way: another's request is not even confirmed
        raise DiscoveryError(f"refused: {spec} has no request {request_id!r} (only the asker may read a request's "
                             "state; the id is the `request` your ask answered)")
    return req.receipt()


def refuse_inside_agent(what: str, pid: int | None = None) -> None:
    """Refuse `what` (listing, approving or denying requests: the operator's acts) when this process
    runs inside an agent session, as its kernel-pid ancestry shows (a host of several sessions counts):
    a peer never decides on, or reads, another agent's request."""
    from relay_repl.session.core.outside import surely_outside_every_session

    if surely_outside_every_session(pid):  # every kind's cheap rule excludes it: the operator's own shell
        return
    from relay_repl.agents.origin import OriginJudge

    try:
        ident, _chain = OriginJudge.default().identify(os.getpid() if pid is None else pid)
    except (OSError, RelayError):
        return  # nothing readable names a session above us: the operator's own shell
    if ident is not None:
        raise PolicyRefusal(f"refused: {what} is the operator's act, and this process runs inside {ident.spec} "
                            "(an agent may ask with relay_send / `relay ask`, never decide or list requests)")
