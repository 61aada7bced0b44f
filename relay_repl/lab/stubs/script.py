"""Per-session scripts for the stub model servers: pydantic values and rule matching.

Pure on purpose (no I/O, no clock, no asyncio): the HTTP layer asks `ScriptState.answer`
what the "model" says next and only then renders it as Anthropic or OpenAI SSE, so every
decision about which rule answers which request is unit-testable without a socket.

Semantics, in the order `answer` applies them:
1. A rule that answered with several steps leaves the rest *pending*; the session's NEXT
   main request takes the next pending step whatever it carries (normally the tool result
   of the previous step). This is how a tool call continues across requests.
2. Otherwise a fresh user text is matched against the rules in order; a rule without
   `match` matches any user text. Tool results never match a rule (a tool result with no
   pending step means the script ran out; it gets the default reply), so a scripted tool
   call cannot loop by re-matching its own output.
3. Otherwise, when the session converses (the default; see `converse.py`) and the user text
   holds a relay envelope with want=reply|ack, the lab agent's answer: SendMessage (Claude) or
   `relay reply` (Codex), as a multi-step answer like a rule's. A scripted rule always wins.
4. Otherwise the default reply: the session's default text, or `ack: <first 80 chars>`.
A step with no explicit `hold` holds `n` seconds when the user text contains `SLOW<n>`.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

SLOW_RE = re.compile(r"SLOW(\d+(?:\.\d+)?)")
MAX_HOLD = 3600.0
ACK_CHARS = 80


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    """A tool call the stub model makes: `name` as the client offers it, `input` its arguments."""

    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)


class Step(_Model):
    """One model response. Text, a tool call, or text followed by a tool call.

    `hold` is how long the stream stays open (after its first event) before the content
    comes, so the client shows itself busy for that long. None means "use SLOW<n> from the
    user text, if any".
    """

    text: str | None = None
    hold: float | None = Field(default=None, ge=0, le=MAX_HOLD)
    tool: ToolCall | None = None


class Rule(_Model):
    """When `match` (a regex, searched) hits the last user text, answer with `steps`."""

    match: str | None = None
    once: bool = False
    steps: list[Step] = Field(min_length=1)
    label: str | None = None

    @field_validator("match")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"match is not a valid regex: {exc}") from exc
        return v

    def hits(self, text: str) -> bool:
        return self.match is None or re.search(self.match, text, re.DOTALL) is not None


class Script(_Model):
    """The whole per-session script, as `PUT /sessions/{name}/script` takes it.

    `converse`: whether the session answers relay envelopes by itself (None leaves it as is)."""

    rules: list[Rule] = Field(default_factory=list)
    default: str | None = None
    converse: bool | None = None


class LastInput(_Model):
    """What the client last said: the user's text, or a tool result's text."""

    text: str = ""
    tool_result: bool = False
    tools: list[str] = Field(default_factory=list, description="the tool names the client offered with this request")
    notes: str = Field(default="", description="what the client appended after that input: Claude's system-role "
                       "notes, e.g. a peer message absorbed while the turn ran")


class Reply(_Model):
    """A resolved step: what the stub will stream now, and why (for the request log)."""

    text: str = ""
    hold: float = 0.0
    tool: ToolCall | None = None
    answered_by: str


class Pending(_Model):
    """The steps a multi-step rule still owes the session, with the rule's label."""

    label: str
    done: int
    total: int
    steps: list[Step]


def slow_seconds(text: str) -> float:
    """`SLOW<n>` anywhere in a user text means hold n seconds (the lab's busy-turn magic)."""
    m = SLOW_RE.search(text)
    return min(float(m.group(1)), MAX_HOLD) if m else 0.0


def ack_text(text: str) -> str:
    return "ack: " + " ".join(text.split())[:ACK_CHARS]


class Converses(Protocol):
    """What answers relay envelopes when no rule did (`converse.Converser`)."""

    enabled: bool
    seen: set[str]

    def answer(self, text: str, tools: list[str] | None = None) -> tuple[str, list[Step]] | None: ...


class ScriptState:
    """The mutable script of one session: rules, the default text, and pending steps."""

    def __init__(self, script: Script | None = None, converser: Converses | None = None) -> None:
        self.rules: list[Rule] = []
        self.default: str | None = None
        self.converser = converser
        self._pending: deque[tuple[str, int, int, Step]] = deque()
        self._seq = 0
        self.replace(script or Script())

    def replace(self, script: Script) -> None:
        """Replace every rule (and the default / converse, when the script names them); drop pending steps."""
        self.rules = [self._labelled(r) for r in script.rules]
        if script.default is not None:
            self.default = script.default
        if script.converse is not None and self.converser is not None:
            self.converser.enabled = script.converse
        self._pending.clear()

    def add_rule(self, rule: Rule) -> Rule:
        rule = self._labelled(rule)
        self.rules.append(rule)
        return rule

    def set_default(self, text: str | None) -> None:
        self.default = text

    def pending(self) -> Pending | None:
        if not self._pending:
            return None
        label, done, total, _ = self._pending[0]
        return Pending(label=label, done=done - 1, total=total, steps=[s for *_, s in self._pending])

    def snapshot(self) -> dict[str, Any]:
        p = self.pending()
        return {
            "rules": [r.model_dump() for r in self.rules],
            "default": self.default,
            "converse": bool(self.converser and self.converser.enabled),
            "seen_relay_ids": sorted(self.converser.seen) if self.converser else [],
            "pending": p.model_dump() if p else None,
        }

    def answer(self, last: LastInput) -> Reply:
        """Decide the next main-conversation response (see the module docstring)."""
        if last.tool_result and last.notes:
            self._absorbed(last)
        if self._pending:
            label, i, total, step = self._pending.popleft()
            return self._resolve(step, last, f"{label} step {i}/{total}")
        if not last.tool_result:
            for idx, rule in enumerate(self.rules):
                if rule.hits(last.text):
                    if rule.once:
                        del self.rules[idx]
                    label = rule.label or f"rule{idx}"
                    total = len(rule.steps)
                    for n, step in enumerate(rule.steps[1:], start=2):
                        self._pending.append((label, n, total, step))
                    return self._resolve(rule.steps[0], last, f"{label} step 1/{total}")
            answer = self.converser.answer(last.text, last.tools) if self.converser is not None else None
            if answer is not None:
                label, steps = answer
                total = len(steps)
                for n, step in enumerate(steps[1:], start=2):
                    self._pending.append((label, n, total, step))
                return self._resolve(steps[0], last, f"{label} step 1/{total}")
        return self._resolve(Step(), last, "default")

    def _absorbed(self, last: LastInput) -> None:
        """A relay envelope that reached the client while its turn ran (Claude: a system-role note
        after the tool result, "decide whether/how to respond" after the current task) is answered
        in this turn, before its closing text, as a model told so would; without this the lab agent
        dropped it (bench.recipes' back-to-back ask-alls: "no reply within 120 s"). Its tool calls
        go first; the turn still ends with the pending closing text (or, with none pending, its own)."""
        answer = self.converser.answer(last.notes, last.tools) if self.converser is not None else None
        if answer is None:
            return
        label, steps = answer
        calls = [st for st in steps if st.tool is not None]
        if not calls:
            return
        closing = [] if self._pending else steps[len(calls):]
        total = len(calls) + len(closing)
        for n, step in reversed(list(enumerate([*calls, *closing], start=1))):
            self._pending.appendleft((label, n, total, step))

    def _resolve(self, step: Step, last: LastInput, why: str) -> Reply:
        hold = step.hold
        if hold is None:
            hold = 0.0 if last.tool_result else slow_seconds(last.text)
        text = step.text
        if text is None:
            text = "" if step.tool is not None else self.default_text(last)
        return Reply(text=text, hold=hold, tool=step.tool, answered_by=why)

    def default_text(self, last: LastInput) -> str:
        if self.default is not None:
            return self.default
        return ack_text(("[tool result] " if last.tool_result else "") + last.text)

    def _labelled(self, rule: Rule) -> Rule:
        self._seq += 1
        return rule if rule.label else rule.model_copy(update={"label": f"rule{self._seq}"})
