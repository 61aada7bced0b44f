"""The four-part plan shown before every side effect (seed section 4).

A plan is a value, not a print statement: the gate asks y/N on it, the ledger
stores it, and tests compare it. It says four things, exactly:
1. the resolved target and what identified it,
2. the transport and its fallback,
3. the exact payload,
4. what counts as delivered.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.plan_text import render_plan
from relay_repl.core.readable import Readable


class Plan(Readable, BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built on first use, off the targets path

    action: str = Field(description="What will happen, in a few words, e.g. 'send', 'register inbox'.")
    target: str = Field(description="The resolved target, e.g. 'claude-code:alpha (pid 5694)'.")
    identified_by: str = Field(description="What evidence resolved it.")
    transport: str
    fallback: str = Field(default="none", description="What would be used instead, or 'none'.")
    payload: str = Field(description="The exact bytes that will be typed, written or queued.")
    delivered_when: str = Field(description="The receiver evidence that will count as delivered.")
    notes: tuple[str, ...] = Field(default=(), description="Warnings the operator should weigh (goal thread, busy target...).")
    files: tuple[str, ...] = Field(default=(), description="Every file the side effect creates or replaces, and why.")
    relay_id: str | None = None
    reply_route: str | None = Field(default=None, description="How the answer asked for (want=reply|ack) comes back.")
    heading: str | None = Field(default=None, description="Where this send stands, e.g. 'recipe review, run R, round 2/5, "
                                "step 1: ask claude:alpha'; printed above the plan")

    def render(self, width: int = 100) -> str:
        """Plain text, one labelled block per part; the payload is shown verbatim, every part
        through `visible` (core/plan_text.py, the one home of the text, which a send's pre-plan
        path prints without the models)."""
        return render_plan(dict(self), width)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        """In the REPL a plan (`await session.preview(...)`) prints as the gate shows it: the four parts."""
        return self.render()


class ReplyContext(BaseModel):
    """What the sender offers for an answer: the agent module turns it into a route."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    relay_id: str
    inbox: str | None = Field(default=None, description="the listening inbox socket, if any")
    listed_name: str | None = Field(default=None, description="the inbox's name as a listed Claude peer, if listed")
    listed_socket: str | None = None
    via: str | None = Field(default=None, description="a route the operator asked for: native, relay-reply, mcp or turn")


class ReplyRoute(BaseModel):
    """How an answer comes back from one target, as its agent module says (shown in the plan)."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    ok: bool
    how: str = Field(description="the route, in words, for the plan")
    needs_native_reply: bool = Field(default=False, description="the send must use a transport the receiver can answer natively")
    missing: str | None = Field(default=None, description="when not ok: what is missing, and the next step")
    offer_register: bool = Field(default=False, description="listing the inbox as a peer (register_inbox) would open the route")
    via: str | None = Field(default=None, description="the route's name: native, relay-reply, mcp or turn")


def relay_reply_route(target_spec: str, ctx: ReplyContext, verified_by: str) -> ReplyRoute:
    """The route every agent that can run a command has: `relay reply ID TEXT` into this inbox
    (core/reply_words.relay_reply: its words have one home, which a plan printed early reads too)."""
    from relay_repl.core.reply_words import relay_reply

    return ReplyRoute(**relay_reply(target_spec, ctx.relay_id, ctx.inbox, verified_by))


RouteName = Literal["relay-reply", "mcp", "turn"]


class ReplyOptions(BaseModel):
    """What one target can answer through, each with the evidence for it."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    relay_reply: bool = Field(description="its agent may run `relay reply` (no sandbox in the way)")
    relay_reply_why: str = ""
    mcp: str | None = Field(default=None, description="where the relay MCP server is configured, if it is")
    mcp_note: str | None = Field(default=None, description="why an MCP call could still be refused")
    turn: str | None = Field(default=None, description="the file its turn reply is read from (may not exist yet)")
    turn_why: str = ""

    def describe(self, route: RouteName, relay_id: str = "<relay id>") -> str:
        """The plan's words for one route (core/reply_words.describe: one home for both plan paths)."""
        from relay_repl.core.reply_words import describe

        return describe(self.model_dump(), route, relay_id)
