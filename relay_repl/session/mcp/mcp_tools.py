"""The relay MCP server's tools, behind `relay mcp`'s protocol layer (session/mcp/mcp_server.py).

Kept apart so the server imports this (pydantic, the ledger, agent discovery: most of a second
of CPU on a loaded machine) only when a tool is first called: most servers a client starts are
never called, and none may spend that time before answering `initialize`.

The server holds no state of its own: every call reads the shared ledger, so an agent's MCP
server started long before the operator's REPL still answers it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_repl.core.envelope import Envelope
from relay_repl.agents import detect_me
from relay_repl.core.inbound import ToolCall
from relay_repl.core.errors import RelayError, UsageError
from relay_repl.core.target import Me
from relay_repl.store.ledger import Ledger


class OpenRequest(BaseModel):
    """One message the operator sent asking for an answer that has not come yet."""

    model_config = ConfigDict(frozen=True)

    relay_id: str
    target: str
    want: str
    hop: int
    payload: str
    sent_at: float


def open_requests(ledger: Ledger, target: str | None = None) -> list[OpenRequest]:
    """Approved sends with want=reply|ack and no reply recorded yet, oldest first; with
    `target` (a spec such as codex:beta), only those sent to exactly that session.

    Read from the ledger's own events (plan, answer, reply), so it sees what every
    relay process on this machine sent under the same RELAY_HOME.
    """
    approved = {e.relay_id for e in ledger.events(kind="answer") if e.relay_id and e.data.get("approved")}
    # answered = an answer the operator's side accepted: the inbox's verdict on it (its `reply`
    # event) or the session's link; a `relay reply` by anyone (the answerer's own `reply` event,
    # with `answers`) closes nothing, or a peer could hide another's request by answering it
    answered = {e.relay_id for e in ledger.events(kind="reply") if e.relay_id and e.data.get("verdict") == "verified"}
    answered |= {e.relay_id for e in ledger.events(kind="linked") if e.relay_id}
    out: dict[str, OpenRequest] = {}
    for e in ledger.events(kind="plan"):
        rid = e.relay_id
        if not rid or rid not in approved or rid in answered:
            continue
        payload = str(e.data.get("payload") or "")
        try:
            env = Envelope.parse(payload)
        except RelayError:
            env = None
        if env is None or env.want == "none" or env.is_halt:
            continue
        where = str(e.data.get("target") or "")
        if target is not None and ledger.sent_to(rid) != target:
            continue
        out[rid] = OpenRequest(relay_id=rid, target=where, want=env.want, hop=env.hop, payload=payload, sent_at=e.at)
    return list(out.values())


def caller_session(call: ToolCall) -> tuple[str | None, str]:
    """The session this MCP server acts for (its spec), or None and why not: the nearest
    session above this process, narrowed by the calling thread's own record where one
    host runs several (agents.origin)."""
    from relay_repl.agents.origin import OriginJudge

    try:
        return OriginJudge.default().session_of(os.getpid(), call)
    except (OSError, RelayError) as exc:
        return None, f"the calling session could not be read ({exc})"


def answerer(relay_id: str, ledger: Ledger, text: str | None = None) -> Me:
    """Who is answering, as the envelope's `from=` will claim it.

    A process that runs inside an agent knows its own address (seed section 1), but an
    MCP server is started by the agent's host with a reduced environment: Codex's daemon
    hosts every thread, so no CODEX_THREAD_ID reaches it. Then the answerer is the session
    that started this server, where the evidence names it (its own record holds this call),
    else the session the operator sent this id to (the ledger's record of the send). Either
    is a claim like any `from=`: the inbox judges the connection by its kernel pid and the
    sender's own record, never by this.
    """
    me = detect_me()
    if me is not None:
        return me
    spec, _why = caller_session(ToolCall(tool="relay_reply", relay_id=relay_id, text=text))
    return _agent_at(spec) or _agent_at(_asked(relay_id, ledger)) or Me(role="agent", agent="mcp", address="relay-mcp")


def _asked(relay_id: str, ledger: Ledger) -> str:
    """The target spec the operator's plan for `relay_id` named (read only when the caller is unknown)."""
    rows = ledger.events(kind="plan", relay_id=relay_id)
    return str(rows[-1].data.get("target") or "").split(" ", 1)[0] if rows else ""


def _agent_at(spec: str | None) -> Me | None:
    """The agent a `kind:name` target spec names, as an envelope's sender; None unless both halves are there."""
    kind, sep, name = (spec or "").partition(":")
    return Me(role="agent", agent=kind, address=name) if sep and kind and name else None


def do_reply(relay_id: str, text: str, ledger: Ledger | None = None) -> dict[str, Any]:
    """The relay_reply tool's body: `relay reply`, with the answer as a plain dict."""
    from relay_repl.session.core.reply import reply

    text = " ".join(text.split())  # one line, as the envelope requires
    if not text:
        raise UsageError("the reply text is empty: pass the one-line answer as `text`")
    ledger = ledger or Ledger.default()
    relay_id = relay_id.strip()
    env, inbox = reply(relay_id, text, ledger=ledger, me=answerer(relay_id, ledger, text))
    return {"replied_to": relay_id, "reply_id": env.id, "hop": env.hop, "inbox": inbox, "line": env.compose()}


def requests_for(ledger: Ledger, caller: tuple[str | None, str]) -> dict[str, Any]:
    """The relay_requests tool's answer: the open requests addressed to the caller only, or
    none and why when the caller's session is not established."""
    spec, why = caller
    if spec is None:
        return {"session": None, "requests": [],
                "why": f"nothing listed: the calling session cannot be established ({why})"}
    return {"session": spec, "evidence": why, "requests": [r.model_dump() for r in open_requests(ledger, spec)]}


def relay_reply(relay_id: str, text: str) -> str:
    """The relay_reply tool: `relay reply` on the shared ledger; a refusal is a RelayError."""
    led = Ledger.default()
    try:
        return json.dumps(do_reply(relay_id, text, ledger=led), ensure_ascii=False)
    finally:
        led.close()


def relay_requests() -> str:
    """The relay_requests tool: the caller's own open requests (or none, and why)."""
    who = caller_session(ToolCall(tool="relay_requests"))
    led = Ledger.default()
    try:
        return json.dumps(requests_for(led, who), ensure_ascii=False)
    finally:
        led.close()


def relay_send(to: str, body: str, want: str = "reply") -> str:
    """The relay_send tool: ask the operator's relay to send (held for approval); a refusal is a RelayError."""
    from relay_repl.session.core.asking import ask

    return json.dumps(ask(to, body, want), ensure_ascii=False)


def relay_request_status(request_id: str) -> str:
    """The relay_request_status tool: the caller's own request's receipt; anyone else's is refused."""
    from relay_repl.session.core.asking import status

    return json.dumps(status(request_id), ensure_ascii=False)
