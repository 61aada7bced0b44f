"""Reply routes in plain values: the rules every kind shares and the plan's words for each route.

Why a plain home: a send that asks for an answer (`want` ack or reply: `relay run ping`'s first
step) names its reply route in the plan, and that plan is printed before pydantic loads (issue 40,
frontends/run_plain.py). So the rules that pick a route from a kind's configuration and the words the
plan says for it live here, over plain dicts, and the models call them (core/plan.relay_reply_route,
`ReplyOptions.describe`, agents/replies.configured_route and its parts build `ReplyRoute` from what
these return). One home: the plan shown early and the plan the models ask about cannot drift.

A route is a dict with `ReplyRoute`'s fields (ok, how, via, missing; needs_native_reply and
offer_register when a kind's default sets them). Options are `ReplyOptions`' fields as a dict
(relay_reply, relay_reply_why, mcp, mcp_note, turn, turn_why). Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

IDENTIFIED = "its connecting process is identified as the target"
"""When a `relay reply` counts, for a kind that says nothing more of its own (RepliesBase.route)."""

Route = dict[str, Any]
Default = Callable[[], Route]

NO_INBOX = ("no inbox is listening here, so an answer would have nowhere to go: ask from the `relay` REPL, "
            "or use `relay send ... --want reply --wait SECONDS`")


def route(ok: bool, how: str = "none", via: str | None = None, missing: str | None = None) -> Route:
    return {"ok": ok, "how": how, "via": via, "missing": missing}


def relay_reply(target_spec: str, relay_id: str, inbox: str | None, verified_by: str) -> Route:
    """The route every agent that can run a command has: `relay reply ID TEXT` into this inbox."""
    if inbox is None:
        return route(False, missing=NO_INBOX)
    return route(True, via="relay-reply", how=(
        f"{target_spec} answers by running `relay reply {relay_id} <text>` (into this inbox, {inbox}); "
        f"the answer carries re={relay_id} and counts when {verified_by}"))


def describe(opts: Mapping[str, Any], which: str, relay_id: str = "<relay id>") -> str:
    """The plan's words for one route (`ReplyOptions.describe`)."""
    if which == "mcp":
        note = f" ({opts['mcp_note']})" if opts.get("mcp_note") else ""
        return (f"the agent calls relay_reply (relay_id={relay_id}) on the relay MCP server ({opts.get('mcp')}), which "
                f"writes into this inbox; started by the agent's client, outside any sandbox{note}")
    if which == "turn":
        return (f"turn reply: the agent's own final message in the turn our message starts, read from "
                f"{opts.get('turn')} ({opts.get('turn_why', '')}); no tool or permission needed, provenance: "
                "receiver's own record")
    return f"`relay reply {relay_id} TEXT` run by the agent ({opts.get('relay_reply_why', '')})"


def turn(target_spec: str, relay_id: str, opts: Mapping[str, Any]) -> Route:
    if not opts.get("turn"):
        return route(False, via="turn", missing=(
            f"{target_spec} has no transcript path in its registry record, so its turn reply cannot be read"))
    return route(True, via="turn", how=describe(opts, "turn", relay_id))


def mcp(target_spec: str, relay_id: str, inbox: str | None, opts: Mapping[str, Any]) -> Route:
    if not opts.get("mcp"):
        return route(False, via="mcp", missing=(
            f"{target_spec}'s configuration has no relay MCP server (`relay mcp`): see `relay mcp --help` for the "
            "lines to add, or use the turn reply (reply_via='turn')"))
    if inbox is None:
        return route(False, via="mcp", missing=(
            "relay_reply writes into this inbox, and none is listening here: ask from the `relay` REPL"))
    return route(True, via="mcp", how=describe(opts, "mcp", relay_id))


def forced(target_spec: str, relay_id: str, inbox: str | None, via: str | None, opts: Mapping[str, Any],
           default: Default) -> Route | None:
    """The route the operator asked for (`via`), or None when they asked for none."""
    if via == "turn":
        return turn(target_spec, relay_id, opts)
    if via == "mcp":
        return mcp(target_spec, relay_id, inbox, opts)
    if via == "relay-reply" and not opts.get("relay_reply"):
        return route(False, via="relay-reply", missing=(
            f"{target_spec} cannot run `relay reply`: {opts.get('relay_reply_why', '')}; use reply_via='mcp' or 'turn'"))
    if via is not None:
        got = default()
        if got.get("via") != via and got["ok"]:
            return route(False, via=via, missing=f"{target_spec} has no {via} reply route")
        return got
    return None


def configured(target_spec: str, relay_id: str, inbox: str | None, via: str | None, opts: Mapping[str, Any],
               default: Default, mcp_refused: bool = False, mcp_first: bool = False) -> Route:
    """The order of a kind whose configuration may sandbox its commands (Codex, Gemini CLI): the
    operator's `via`; else `relay reply` (the kind's `default`) where no sandbox is in the way; else
    relay_reply on the relay MCP server, when configured and not certain to be refused (`mcp_refused`,
    the kind's reading of its approval settings); else the turn reply.

    `mcp_first` (the kind's own fact: its agent, offered the relay MCP server, answers through it
    even with a shell that could run `relay reply`): where both routes are open, the plan names
    relay_reply first and `relay reply` as the alternative, whether the operator asked for neither,
    `via='mcp'` or `via='relay-reply'` (which one the agent takes is its own choice, and relay accepts
    and verifies either the same way); an asked route is named first."""
    both = via in (None, "mcp", "relay-reply") and opts.get("relay_reply") and mcp_first and not mcp_refused
    by_mcp = mcp(target_spec, relay_id, inbox, opts) if both else None
    if by_mcp is not None and by_mcp["ok"]:
        shell = default()
        shell = {**shell, "how": f"{shell['how']} ({opts.get('relay_reply_why', '')})"}
        if shell["ok"]:
            return either(by_mcp, shell) if via != "relay-reply" else either(shell, by_mcp)
    asked = forced(target_spec, relay_id, inbox, via, opts, default)
    if asked is not None:
        return asked
    if opts.get("relay_reply"):
        return default()
    by_mcp = mcp(target_spec, relay_id, inbox, opts)
    return by_mcp if by_mcp["ok"] and not mcp_refused else turn(target_spec, relay_id, opts)


def either(first: Route, other: Route) -> Route:
    """Two open routes, the likelier first: the plan names both (the route's `via` is the first's)."""
    return {**first, "how": f"{first['how']}; or {other['how']}"}


# -- a client's MCP table ---------------------------------------------------------------------


def is_relay_mcp(command: Any, args: Any) -> bool:
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
            and is_relay_mcp(s.get("command"), s.get("args"))]


def relay_server(servers: Any) -> tuple[str, dict[str, Any]] | None:
    """The first enabled server of a client's MCP table that runs `relay mcp`: its name and entry
    (where its trust or approval settings are read), or None."""
    names = relay_servers(servers)
    return (names[0], servers[names[0]]) if names else None
