"""Choosing a transport: a ranking over declared capabilities, never over names.

Seed section 3: these are capability preferences, not product branches, so a
new adapter exposing a stronger transport wins the same ranking. Modifiers:
- durable receipt required (busy-for-long targets, goal threads) → only durable
  transports; none available is reported, never silently downgraded;
- an unassisted native reply required → only native-reply transports;
- a target that never goes idle → durable, or withhold and say why;
- same-uid-only and needs-pane are enforced by each transport's `refusal()`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from relay_repl.core import transport_rank
from relay_repl.core.errors import PolicyRefusal
from relay_repl.core.target import Target
from relay_repl.transports.base import Capabilities, Transport


class Requirements(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    durable: bool = False
    native_reply: bool = False


def strength(c: Capabilities) -> tuple[int, ...]:
    """Higher sorts first (core/transport_rank.py holds the rule, for the plain pre-plan too)."""
    return transport_rank.strength(dict(c))


class Choice(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    transport: Transport
    fallback: str
    notes: tuple[str, ...] = ()


def choose(
    target: Target,
    available: Sequence[Transport],
    req: Requirements = Requirements(),
    requested: str | None = None,
) -> Choice:
    """Pick the strongest usable transport for `target`, or refuse with the reason."""
    offered = [t for t in available if t.name in target.transports]
    notes: list[str] = []
    refusals = {t.name: t.refusal(target) for t in offered}
    usable = [t for t in offered if refusals[t.name] is None]

    if target.state == "never-idle" and not req.durable:
        notes.append(transport_rank.never_idle_note(target.spec))
        req = req.model_copy(update={"durable": True})

    def filtered(ts: list[Transport]) -> list[Transport]:
        out = ts
        if req.durable:
            out = [t for t in out if t.capabilities.durable]
        if req.native_reply:
            out = [t for t in out if t.capabilities.native_reply]
        return out

    if requested is not None:
        match = [t for t in offered if t.name == requested]
        if not match:
            have = ", ".join(t.name for t in offered) or "none"
            raise PolicyRefusal(f"{requested} cannot reach {target.spec} (its transports: {have}); not falling back silently")
        if refusals[requested]:
            raise PolicyRefusal(f"{requested} refused for {target.spec}: {refusals[requested]}; not falling back silently")
        if not filtered(match):
            need = "a durable path" if req.durable else "an unassisted native reply"
            raise PolicyRefusal(f"{requested} cannot give {need} to {target.spec}; pick a transport that can")
        chosen = match[0]
        rest = [t for t in filtered(usable) if t is not chosen]
        fallback = "none (transport requested explicitly)"
        if rest:
            fallback += f"; {rest[0].name} would also work"
        return Choice(transport=chosen, fallback=fallback, notes=tuple(notes))

    ranked = sorted(filtered(usable), key=lambda t: strength(t.capabilities), reverse=True)
    if not ranked:
        why = "; ".join(f"{n}: {r}" for n, r in refusals.items() if r)
        why = f" ({why})" if why else ("" if offered else " (it offers none)")
        if req.durable:
            live_only = [t.name for t in sorted(usable, key=lambda t: strength(t.capabilities), reverse=True)]
            extra = f"; live-only {', '.join(live_only)} would work, but a durable path was required" if live_only else ""
            raise PolicyRefusal(f"no durable transport reaches {target.spec}{extra}: not downgrading{why}")
        if req.native_reply:
            raise PolicyRefusal(f"no transport gives {target.spec} an unassisted native reply{why}")
        raise PolicyRefusal(f"no transport can reach {target.spec}{why}")
    return Choice(transport=ranked[0], fallback=plain_fallback(ranked), notes=tuple(notes))


def plain_fallback(ranked: Sequence[Transport]) -> str:
    """What a plain send falls back to: nothing, and the plan says so (core/transport_rank.py)."""
    return transport_rank.plain_fallback([t.name for t in ranked])
