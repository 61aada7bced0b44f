"""Reply routes: the part every agent kind shares, and the dispatch to each kind's own.

Why a route depends on configuration, not on the kind alone: a sandboxed agent may be unable
to run `relay reply` yet able to call an MCP tool its client starts outside the sandbox, and
every agent's final message is in its own record whatever it may run. So each kind's package
(`<kind>/replies.py`) reads its configuration into `ReplyOptions`, and the plan names the route
that will actually work, chosen here by the rules all kinds share (`forced_route`, `mcp_route`,
`turn_route`, and `configured_route` for a kind whose sandbox decides). Read-only: config files and registry fields are read, nothing is started or written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


from relay_repl.agents.registry import kind_for
from relay_repl.agents.turn_reply import TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import UsageError
from relay_repl.core.plan import ReplyContext, ReplyOptions, ReplyRoute
from relay_repl.core.target import Target

VIAS = ("native", "relay-reply", "mcp", "turn")



def _is_relay_mcp(command: Any, args: Any) -> bool:
    """A server entry that runs `relay mcp` (or `python -m relay_repl mcp`)."""
    if not isinstance(command, str):
        return False
    argv = [os.path.basename(command), *(a for a in args or [] if isinstance(a, str))]
    return "mcp" in argv[1:] and (argv[0] == "relay" or "relay_repl" in argv)


def relay_servers(servers: Any) -> list[str]:
    if not isinstance(servers, dict):
        return []
    return [name for name, s in servers.items()
            if isinstance(s, dict) and s.get("enabled", True) is not False
            and _is_relay_mcp(s.get("command"), s.get("args"))]


def relay_server(servers: Any) -> tuple[str, dict[str, Any]] | None:
    """The first enabled server of a client's MCP table that runs `relay mcp`: its name and entry
    (where its trust or approval settings are read), or None."""
    names = relay_servers(servers)
    return (names[0], servers[names[0]]) if names else None


# -- routes for the plan ------------------------------------------------------------------------

Default = Callable[[Target, ReplyContext], ReplyRoute]


def check_via(via: str | None) -> None:
    if via is not None and via not in VIAS:
        raise UsageError(f"unknown reply route {via!r}: use one of {', '.join(VIAS)} (or leave it out to let relay pick)")


def turn_route(target: Target, ctx: ReplyContext, opts: ReplyOptions) -> ReplyRoute:
    if not opts.turn:
        return ReplyRoute(ok=False, how="none", via="turn", missing=(
            f"{target.spec} has no transcript path in its registry record, so its turn reply cannot be read"))
    return ReplyRoute(ok=True, via="turn", how=opts.describe("turn", ctx.relay_id))


def mcp_route(target: Target, ctx: ReplyContext, opts: ReplyOptions) -> ReplyRoute:
    if not opts.mcp:
        return ReplyRoute(ok=False, how="none", via="mcp", missing=(
            f"{target.spec}'s configuration has no relay MCP server (`relay mcp`): see `relay mcp --help` for the "
            "lines to add, or use the turn reply (reply_via='turn')"))
    if ctx.inbox is None:
        return ReplyRoute(ok=False, how="none", via="mcp", missing=(
            "relay_reply writes into this inbox, and none is listening here: ask from the `relay` REPL"))
    return ReplyRoute(ok=True, via="mcp", how=opts.describe("mcp", ctx.relay_id))


def forced_route(target: Target, ctx: ReplyContext, opts: ReplyOptions, default: Default) -> ReplyRoute | None:
    if ctx.via == "turn":
        return turn_route(target, ctx, opts)
    if ctx.via == "mcp":
        return mcp_route(target, ctx, opts)
    if ctx.via == "relay-reply" and not opts.relay_reply:
        return ReplyRoute(ok=False, how="none", via="relay-reply", missing=(
            f"{target.spec} cannot run `relay reply`: {opts.relay_reply_why}; use reply_via='mcp' or 'turn'"))
    if ctx.via is not None:
        route = default(target, ctx)
        if route.via != ctx.via and route.ok:
            return ReplyRoute(ok=False, how="none", via=ctx.via, missing=f"{target.spec} has no {ctx.via} reply route")
        return route
    return None


def configured_route(target: Target, ctx: ReplyContext, opts: ReplyOptions, default: Default,
                     mcp_refused: bool = False, mcp_first: bool = False) -> ReplyRoute:
    """The order of a kind whose configuration may sandbox its commands (Codex, Gemini CLI): the
    operator's `via`; else `relay reply` (the kind's `default`) where no sandbox is in the way; else
    relay_reply on the relay MCP server, when configured and not certain to be refused (`mcp_refused`,
    the kind's reading of its approval settings); else the turn reply.

    `mcp_first` (the kind's own fact: its agent, offered the relay MCP server, answers through it
    even with a shell that could run `relay reply`): where both routes are open, the plan names
    relay_reply first and `relay reply` as the alternative, whether the operator asked for neither,
    `via='mcp'` or `via='relay-reply'` (which one the agent takes is its own choice, and relay accepts
    and verifies either the same way); an asked route is named first."""
    both = ctx.via in (None, "mcp", "relay-reply") and opts.relay_reply and mcp_first and not mcp_refused
    mcp = mcp_route(target, ctx, opts) if both else None
    if mcp is not None and mcp.ok:
        shell = default(target, ctx)
        shell = shell.model_copy(update={"how": f"{shell.how} ({opts.relay_reply_why})"})
        if shell.ok:
            return either(mcp, shell) if ctx.via != "relay-reply" else either(shell, mcp)
    forced = forced_route(target, ctx, opts, default)
    if forced is not None:
        return forced
    if opts.relay_reply:
        return default(target, ctx)
    mcp = mcp_route(target, ctx, opts)
    return mcp if mcp.ok and not mcp_refused else turn_route(target, ctx, opts)


def either(first: ReplyRoute, other: ReplyRoute) -> ReplyRoute:
    """Two open routes, the likelier first: the plan names both (the route's `via` is the first's)."""
    return first.model_copy(update={"how": f"{first.how}; or {other.how}"})


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
