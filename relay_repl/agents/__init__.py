"""Layer 4: everything specific to one agent kind, and the protocol the layers above use.

One package per kind holds all that relay_repl knows about it: `claude_code/` and `codex/`
(discovery provider, evidence readers, for Claude the peer registration, and the `Agent`
implementation), with the adapter file (`adapters/<kind>.md`, validated by `load_adapter`:
footer pattern, verified versions, transports offered) and the screen classifier
(`screens/<kind>.py`). Transports, the lab and the session ask `agent_for(kind)` (the
`Agent` protocol, `agent.py`) instead of branching on the kind. Providers implement the
session's `Provider` protocol (`kind`, `async discover() -> list[Target]`) and only read:
registry files, /proc, SQLite opened read-only, the Codex daemon's status API and tmux
listings/captures. They never type into a pane or write a registry.

    from relay_repl.agents import default_providers
    providers = default_providers()            # from os.environ
    providers = default_providers(lab.env())   # pointed at the lab
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from relay_repl.core.plan import ReplyContext, ReplyRoute, relay_reply_route
from relay_repl.core.target import Me, Target
from relay_repl.agents.adapter import AdapterError, AdapterSpec, TransportSpec, available_adapters, load_adapter
from relay_repl.agents import claude_code, codex
from relay_repl.agents.agent import Agent, TypedEvidence
from relay_repl.agents.claude_code import ClaudeAgent, ClaudeProvider, munge_cwd, transcript_path
from relay_repl.agents.codex import CodexAgent, CodexProvider
from relay_repl.system.panes import Pane, PaneRoster, TmuxServer, tmux_servers

__all__ = [
    "Agent",
    "TypedEvidence",
    "agent_for",
    "AdapterError",
    "AdapterSpec",
    "ClaudeProvider",
    "CodexProvider",
    "Pane",
    "PaneRoster",
    "TmuxServer",
    "TransportSpec",
    "available_adapters",
    "default_providers",
    "detect_me",
    "load_adapter",
    "munge_cwd",
    "reply_route",
    "tmux_servers",
    "transcript_path",
]


def default_providers(env: Mapping[str, str] | None = None) -> list[ClaudeProvider | CodexProvider]:
    """[ClaudeProvider(), CodexProvider()] configured from `env` (default: os.environ).

    Both share one PaneRoster, so a refresh lists each tmux server and scans /proc once.
    """
    environ = dict(os.environ if env is None else env)
    roster = PaneRoster(env=environ)
    return [ClaudeProvider(env=environ, panes=roster), CodexProvider(env=environ, panes=roster)]


def detect_me(env: Mapping[str, str] | None = None) -> Me | None:
    """Our own address when this process runs inside an agent session (seed §1), else None."""
    environ = dict(os.environ if env is None else env)
    return CodexProvider(env=environ).own_address() or ClaudeProvider(env=environ).own_address()


_AGENTS: dict[str, Agent] = {a.kind: a for a in (ClaudeAgent(), CodexAgent())}


def agent_for(kind: str) -> Agent | None:
    """The agent of a Target kind (what transports ask instead of branching on the kind), or None."""
    return _AGENTS.get(kind)


_REPLY_ROUTES = {claude_code.KIND: claude_code.reply_route, codex.KIND: codex.reply_route}


def reply_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """How `target` will answer a want=reply|ack message, as its agent module says.

    A kind with no module of its own gets the route any process has: `relay reply`.
    """
    route = _REPLY_ROUTES.get(target.kind)
    if route is not None:
        return route(target, ctx)
    return relay_reply_route(target.spec, ctx, "its connecting process is identified as the target")
