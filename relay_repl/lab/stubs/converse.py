"""What a lab agent does, unscripted, with a relay envelope that asks for an answer.

The lab's stub models are not intelligent, but the operator's tour (`relay --lab`) and the
round-trip tests need agents that answer the way a real agent is asked to (seed sections 1,
5 and 9; README): a user message carrying `[relay/1 ... want=reply|ack]` makes

- a lab agent of a kind that answers natively only a peer listed in its own registry
  (`replies.answers_listed_inbox`: Claude Code) make its kind's message call to the sender's listed
  peer name with a reply envelope (`LabDriver.message_call`: SendMessage), first loading that tool
  when its client defers it (`LabDriver.load_call`: ToolSearch, skipped once the client offers the
  tool), then end the turn with a short text;
- any other lab agent call relay_reply on the relay MCP server when its client offers that tool
  (`mcp__<server>__relay_reply` among the request's tools: the lab configures the server, as
  `relay mcp --help` tells an operator to), else run the shell command `relay reply <id> <text>`
  through its client's shell tool (`LabDriver.shell_call`: the lab puts `relay` on the PATH its
  commands see); then end the turn with a short text. Why MCP first: the server runs already, so
  the reply costs 0.00-0.04 CPU-s where a `relay reply` Python start costs 0.22-0.39
  (adapters/codex.md, Verified latencies), and the suite and `bench.recipes` are CPU-bound.

The tool names and argument shapes are each kind's (its lab driver, agents/<kind>/lab.py): this
module asks the driver of the kind whose sessions talk the stub's API (`LabSpec.stub_api`).

An agent asks too (issue 31): a user text with a line `ask <target> via relay (want=reply): <body>`
(`(want=...)` optional, default reply) makes the lab agent call relay_send on the relay MCP server its
client offers (`mcp__<server>__relay_send`; a client that defers the tool first loads it, through its
driver's `load_call`), else run `relay ask <target> <body> --want <want>` through its shell tool;
`status of relay request <id>` makes it call relay_request_status (else `relay ask --status <id>`).
Then the turn ends with a short text. The relay ids of the envelopes that carried such a prompt are
remembered like any other: a repeated one is not acted on again.

The reply body is recognisable: `ack <id>` for want=ack, `reply to <id>: ...` for want=reply,
and a native reply envelope carries `re=<id>` (a relay reply's envelope is built by `relay
reply`). Every kind honours the loop rules: a message with `relay-halt` is not acted on, a
relay id seen before is dropped (nothing done the second time), and a message at the hop cap
is not answered. Each of those ends the turn with a text that says why, and no tool call.

Pure (no I/O): the listed peer name comes from a resolver the server injects, so every
decision is unit-testable.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any

from relay_repl.agents.kind import AgentKind, LabCall, LabDriver
from relay_repl.core.mcp_names import MCP_TOOL
from relay_repl.core.envelope import HOP_CAP, PREFIX, Envelope, contains_halt
from relay_repl.core.errors import EnvelopeError
from relay_repl.lab.stubs.script import Step, ToolCall


def lab_kind(api: str) -> tuple[AgentKind, LabDriver] | None:
    """The kind whose lab sessions talk to stub `api` (its `LabSpec.stub_api`) and its lab driver, or
    None. Asked of the registry, so a new kind's stub signs with its own name and makes its own calls."""
    from relay_repl.agents import registry

    for k in registry.kinds():
        d = k.lab_driver()
        if d is not None and d.spec.stub_api == api:
            return k, d
    return None


def _step(call: LabCall | None) -> list[Step]:
    return [] if call is None else [Step(tool=ToolCall(name=call.name, input=dict(call.input)))]


ENVELOPE_START = re.compile(re.escape(PREFIX))
QUOTE_CHARS = 60

PeerResolver = Callable[[Envelope], str | None]
"""Sender envelope -> the name under which the sender is listed as a peer in the lab client's own
registry (`replies.listed_peer_name`), or None."""


def find_envelopes(text: str) -> list[Envelope]:
    """Every well-formed relay envelope in a user text, in order.

    The envelope need not start the text: a client may wrap a delivered message (Claude Code:
    "Another Claude session sent a message:\\n<content>\\n\\n..."), so each `[relay/1 ` is
    parsed up to the end of its line. A malformed one is skipped (a real agent would not
    answer what it cannot read either).
    """
    out: list[Envelope] = []
    for m in ENVELOPE_START.finditer(text):
        line = text[m.start():].split("\n", 1)[0].rstrip()
        try:
            env = Envelope.parse(line)
        except EnvelopeError:
            continue
        if env is not None:
            out.append(env)
    return out


def reply_body(env: Envelope) -> str:
    """`ack <id>` or `reply to <id>: received "<start of the body>"` (one line)."""
    if env.want == "ack":
        return f"ack {env.id}"
    quoted = "".join(c for c in " ".join(env.body.split()) if c.isprintable())[:QUOTE_CHARS]
    return f'reply to {env.id}: received "{quoted}"'


def reply_line(env: Envelope, *, sender: str, new_id: str) -> str:
    """The reply envelope a lab agent sends natively to its listed peer: hop + 1, want=none, `re=<id answered>`.

    `re=` follows `want=` (the conversation contract): `Envelope.header` writes it there.
    """
    return Envelope.make(sender=sender, to=env.role, id=new_id, hop=env.next_hop().hop, want="none", re=env.id,
                         body=reply_body(env)).compose()


ASK_RE = re.compile(r"\bask (?P<to>[^\s:]+:[^\s:]+(?:/[^\s:]+:[^\s:]+)?) via relay"
                    r"(?: \(want=(?P<want>reply|ack|none)\))?: (?P<body>[^\n]+)")
STATUS_RE = re.compile(r"\bstatus of relay request (?P<id>[^\s\]]+)")


def mcp_tool(tools: list[str], tool: str) -> str | None:
    """The relay MCP server's `tool` as the client offers it, in the scripts' spelling
    (`mcp__<server>__<tool>`; the stubs rename it on the way out), the server `relay` first; None
    when the client offers none (Gemini CLI offers `mcp_<server>_<tool>`)."""
    found = [t for t in tools if (t.startswith("mcp__") and t.endswith("__" + tool))]
    found += [f"mcp__relay__{tool}" for t in tools if t == f"mcp_relay_{tool}"]
    return f"mcp__relay__{tool}" if f"mcp__relay__{tool}" in found else (found[0] if found else None)


def mcp_reply_tool(tools: list[str]) -> str | None:
    """The offered relay_reply MCP tool, `mcp__<server>__relay_reply` (the server named `relay`
    first: the name `relay mcp --help` suggests), or None when the client offers none."""
    found = [t for t in tools if t.startswith("mcp__") and t.endswith("__" + MCP_TOOL)]
    return f"mcp__relay__{MCP_TOOL}" if f"mcp__relay__{MCP_TOOL}" in found else (found[0] if found else None)


class Converser:
    """One lab agent's memory of relay ids it has seen, and its answers to new ones."""

    def __init__(self, *, name: str, api: str, resolve_peer: PeerResolver | None = None,
                 id_base: int = 0) -> None:
        self.name = name
        self.api = api
        self.resolve_peer = resolve_peer or (lambda env: None)
        self.seen: set[str] = set()
        self._next = id_base
        self.enabled = True
        found = lab_kind(api)
        self.kind: AgentKind | None = found[0] if found else None
        self.driver: LabDriver | None = found[1] if found else None

    @property
    def sender(self) -> str:
        return f"agent:{self.kind.facts.kind if self.kind else 'agent'}@{self.name}"

    @property
    def native(self) -> bool:
        """Whether its agent answers natively, to the sender's listed peer (`answers_listed_inbox`)."""
        return self.kind is not None and self.kind.replies.answers_listed_inbox

    def completed(self, tool: ToolCall) -> ToolCall:
        """A tool call about to be sent, with what its client needs that a script may leave out
        (its kind's `LabDriver.scripted_call`)."""
        if self.driver is None:
            return tool
        call = self.driver.scripted_call(LabCall(name=tool.name, input=dict(tool.input)))
        return ToolCall(name=call.name, input=dict(call.input))

    def _shell(self, cmd: str, why: str) -> LabCall | None:
        return self.driver.shell_call(cmd, why) if self.driver is not None else None

    def _new_id(self) -> str:
        self._next += 1
        return f"{self.name}-{self._next}"

    def answer(self, text: str, tools: list[str] | None = None) -> tuple[str, list[Step]] | None:
        """(label, steps) for a user text holding relay envelopes, or None when it holds none
        that asks for an answer (the stub's ordinary default reply then applies). `tools` are
        the tool names the client offered: a deferred tool already among them needs no loading."""
        if not self.enabled:
            return None
        envs = find_envelopes(text)
        asked = self._asking(text, envs, tools or [])
        if asked is not None:
            return asked
        if not envs:
            return None
        if contains_halt(text):
            self.seen.update(e.id for e in envs)
            ids = ", ".join(e.id for e in envs)
            return "converse: halt", [Step(text=f"relay-halt received ({ids}): stopping, not answering")]
        asking = [e for e in envs if e.want in ("reply", "ack")]
        if not asking:
            self.seen.update(e.id for e in envs)
            return None
        fresh: list[Envelope] = []
        notes: list[str] = []
        for env in envs:
            if env.id in self.seen:
                if env.want in ("reply", "ack"):
                    notes.append(f"duplicate relay id {env.id}: already handled, not answering")
                continue
            self.seen.add(env.id)
            if env.want not in ("reply", "ack"):
                continue
            if env.hop >= HOP_CAP:
                notes.append(f"relay id {env.id} is at the hop cap {HOP_CAP}: not answering")
                continue
            fresh.append(env)
        if not fresh:
            return "converse: nothing to answer", [Step(text="; ".join(notes) or "nothing to answer")]
        mcp = mcp_reply_tool(tools or [])
        if self.native:
            steps = self._message_steps(fresh, notes, tools or [])
        elif mcp is not None:
            steps = self._mcp_reply_steps(fresh, mcp)
        else:
            steps = self._shell_reply_steps(fresh)
        return "converse: " + " ".join(e.id for e in fresh), steps

    def _message_steps(self, envs: list[Envelope], notes: list[str], tools: list[str]) -> list[Step]:
        """The kind's native message to each sender's listed peer (its driver's `message_call`),
        its tool loaded first when the client defers it (`load_call`)."""
        calls: list[LabCall] = []
        done: list[str] = []
        label = self.kind.facts.label if self.kind else "lab client"
        for env in envs:
            peer = self.resolve_peer(env)
            if not peer:
                notes.append(f"cannot answer {env.id}: {env.sender} is not a listed {label} peer "
                             "(the operator can list its inbox with `await session.register_inbox()`)")
                continue
            line = reply_line(env, sender=self.sender, new_id=self._new_id())
            call = self.driver.message_call(peer, line, f"answer to {env.id}") if self.driver else None
            if call is None:
                notes.append(f"cannot answer {env.id}: the {label} lab agent has no message tool")
                continue
            calls.append(call)
            done.append(f"answered {env.id} to {peer}")
        if not calls:
            return [Step(text="; ".join(notes))]
        load = self.driver.load_call(calls[0].name, tools) if self.driver else None
        return [*_step(load), *(s for c in calls for s in _step(c)), Step(text="; ".join(done + notes))]

    def _mcp_reply_steps(self, envs: list[Envelope], tool: str) -> list[Step]:
        """relay_reply on the relay MCP server the client offers (`tool`, its `mcp__<server>__relay_reply`)."""
        steps = [Step(tool=ToolCall(name=tool, input={"relay_id": env.id, "text": reply_body(env)})) for env in envs]
        steps.append(Step(text="; ".join(f"answered {e.id} with relay_reply" for e in envs)))
        return steps

    def _shell_reply_steps(self, envs: list[Envelope]) -> list[Step]:
        """`relay reply` through the client's shell tool, as its kind's driver spells a call of it
        (`LabDriver.shell_call`)."""
        steps: list[Step] = []
        for env in envs:
            cmd = f"relay reply {shlex.quote(env.id)} {shlex.quote(reply_body(env))}"
            call = self._shell(cmd, env.id)
            if call is None:
                return [Step(text=f"cannot answer {env.id}: no relay_reply tool and no shell tool")]
            steps += _step(call)
        steps.append(Step(text="; ".join(f"answered {e.id} with relay reply" for e in envs)))
        return steps

    def _asking(self, text: str, envs: list[Envelope], tools: list[str]) -> tuple[str, list[Step]] | None:
        """An ask (`ask <target> via relay: ...`) or a status read in the user's text: the calls that
        make them, or None when the text holds neither (or only in envelopes already handled)."""
        ask, status = ASK_RE.search(text), STATUS_RE.search(text)
        if (ask is None and status is None) or any(e.is_halt for e in envs):
            return None  # a relay message carrying relay-halt is not acted on (a typed prompt may carry the word)
        if envs and all(e.id in self.seen for e in envs):
            return "converse: asked already", [Step(text="already handled: not asking again")]
        self.seen.update(e.id for e in envs)
        steps: list[Step] = []
        if ask is not None:
            to, want, body = ask.group("to"), ask.group("want") or "reply", ask.group("body").strip()
            steps += self._tool_steps(tools, "relay_send", {"to": to, "body": body, "want": want},
                                      f"relay ask {shlex.quote(to)} {shlex.quote(body)} --want {want}")
        if status is not None:
            rid = status.group("id")
            steps += self._tool_steps(tools, "relay_request_status", {"request": rid},
                                      f"relay ask --status {shlex.quote(rid)}")
        if not steps:
            return "converse: cannot ask", [Step(text="cannot ask relay: no relay_send tool and no shell tool")]
        what = "asked relay to send" if ask is not None else "read the request's status"
        return f"converse: {what}", [*steps, Step(text=f"{what} (the operator decides; nothing is sent until then)")]

    def _tool_steps(self, tools: list[str], tool: str, args: dict[str, Any], cmd: str) -> list[Step]:
        """The relay MCP tool when offered (loaded first when the client defers it: its driver's
        `load_call`), else `cmd` through the shell tool."""
        offered = mcp_tool(tools, tool)
        if offered is not None:
            return [Step(tool=ToolCall(name=offered, input=args))]
        name = f"mcp__relay__{tool}"
        load = self.driver.load_call(name, tools) if self.driver is not None else None
        if load is not None:  # a deferred MCP tool: load it, then call it
            return [*_step(load), Step(tool=ToolCall(name=name, input=args))]
        return _step(self._shell(cmd, tool))
