"""Reply routes: the part every agent kind shares, and the dispatch to each kind's own.

Why a route depends on configuration, not on the kind alone: a sandboxed agent may be unable
to run `relay reply` yet able to call an MCP tool its client starts outside the sandbox, and
every agent's final message is in its own record whatever it may run. So each kind's package
(`<kind>/replies.py`) reads its configuration into `ReplyOptions`, and the plan names the route
that will actually work, chosen here by the rules all kinds share (`forced_route`, `mcp_route`,
`turn_route`, and `configured_route` for a kind whose sandbox decides). Read-only: config files and registry fields are read, nothing is started or written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relay_repl.agents.registry import kind_for
from relay_repl.core import reply_words
from relay_repl.agents.turn_reply import TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import UsageError
from relay_repl.core.plan import ReplyContext, ReplyOptions, ReplyRoute
from relay_repl.core.target import Target

VIAS = ("native", "relay-reply", "mcp", "turn")


# -- routes for the plan: the rules are core/reply_words.py's (plain values, so a plan printed before the
# models names the same route); these wrap them in `ReplyRoute` ---------------------------------------

Default = Callable[[Target, ReplyContext], ReplyRoute]


def check_via(via: str | None) -> None:
    if via is not None and via not in VIAS:
        raise UsageError(f"unknown reply route {via!r}: use one of {', '.join(VIAS)} (or leave it out to let relay pick)")


def _plain_default(target: Target, ctx: ReplyContext, default: Default) -> Callable[[], dict[str, Any]]:
    return lambda: default(target, ctx).model_dump()


def turn_route(target: Target, ctx: ReplyContext, opts: ReplyOptions) -> ReplyRoute:
    return ReplyRoute(**reply_words.turn(target.spec, ctx.relay_id, opts.model_dump()))


def mcp_route(target: Target, ctx: ReplyContext, opts: ReplyOptions) -> ReplyRoute:
    return ReplyRoute(**reply_words.mcp(target.spec, ctx.relay_id, ctx.inbox, opts.model_dump()))


def forced_route(target: Target, ctx: ReplyContext, opts: ReplyOptions, default: Default) -> ReplyRoute | None:
    got = reply_words.forced(target.spec, ctx.relay_id, ctx.inbox, ctx.via, opts.model_dump(),
                             _plain_default(target, ctx, default))
    return None if got is None else ReplyRoute(**got)


def configured_route(target: Target, ctx: ReplyContext, opts: ReplyOptions, default: Default,
                     mcp_refused: bool = False, mcp_first: bool = False) -> ReplyRoute:
    """The order of a kind whose configuration may sandbox its commands (Codex, Gemini CLI):
    `reply_words.configured` (its docstring has the rules), as a `ReplyRoute`."""
    return ReplyRoute(**reply_words.configured(target.spec, ctx.relay_id, ctx.inbox, ctx.via, opts.model_dump(),
                                               _plain_default(target, ctx, default), mcp_refused=mcp_refused,
                                               mcp_first=mcp_first))


def either(first: ReplyRoute, other: ReplyRoute) -> ReplyRoute:
    """Two open routes, the likelier first: the plan names both (the route's `via` is the first's)."""
    return ReplyRoute(**reply_words.either(first.model_dump(), other.model_dump()))


# -- dispatch --------------------------------------------------------------------------------


def delivery_evidence(delivery: Delivery, key: str) -> str | None:
    """The newest value a delivery stage recorded under `key` (extra first)."""
    recorded = getattr(delivery.extra, key, None)
    if recorded:
        return str(recorded)
    for ev in reversed(delivery.evidence):
        if ev.data.get(key):
            return str(ev.data[key])
    return None


def reply_options(target: Target) -> ReplyOptions | None:
    """What `target` can answer through, as its agent kind says (None: an unregistered kind)."""
    kind = kind_for(target.kind)
    return kind.replies.options(target) if kind is not None else None


def turn_watch(target: Target, delivery: Delivery) -> TurnWatch | None:
    """A watcher for the turn `delivery` started in `target`, or None when this kind keeps no record we read."""
    kind = kind_for(target.kind)
    return kind.replies.turn_watch(target, delivery) if kind is not None else None
