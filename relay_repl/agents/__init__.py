"""Layer 4: everything specific to one agent kind, and the protocol the layers above use.

One package per kind holds all that relay_repl knows about it (`claude_code/`, `codex/`, or a
distribution installed beside relay_repl): discovery, evidence readers, reply routes, doctor
checks, the pinned client and how the lab starts it, behind one protocol, `AgentKind`
(`kind.py`: its facts, seven capabilities and its lab driver). The kinds are found through one registry (`registry.py`) filled from the
entry-point group `relay_repl.agents`; the layers above ask it (`kinds()`, `agent_for(kind)`)
instead of naming a kind. Providers implement the session's `Provider` protocol (`kind`,
`async discover() -> list[Target]`) and only read: registry files, /proc, SQLite opened
read-only, daemons' status APIs and tmux listings/captures. They never type into a pane or
write a registry.

    from relay_repl.agents import default_providers
    providers = default_providers()            # from os.environ
    providers = default_providers(lab.env())   # pointed at the lab
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from relay_repl.core.target import Me, Target
from relay_repl.agents.adapter import AdapterError, AdapterSpec, TransportSpec, available_adapters, load_adapter
from relay_repl.agents.agent import TypedEvidence
from relay_repl.agents.discovery import KindProvider, Provider
from relay_repl.agents.kind import AgentKind, AgentKindBase
from relay_repl.agents.registry import RegistryError, kind_by_prefix, kind_for, kind_names, kinds
from relay_repl.system.panes import Pane, PaneRoster, TmuxServer, tmux_servers

if TYPE_CHECKING:  # core/plan.py (~50 pydantic models) loads on first use, not on the `relay targets` path
    from relay_repl.core.plan import ReplyContext, ReplyRoute

__all__ = [
    "AgentKind",
    "AgentKindBase",
    "TypedEvidence",
    "agent_for",
    "AdapterError",
    "AdapterSpec",
    "Pane",
    "PaneRoster",
    "KindProvider",
    "Provider",
    "RegistryError",
    "TmuxServer",
    "TransportSpec",
    "available_adapters",
    "default_providers",
    "detect_me",
    "kind_by_prefix",
    "kind_for",
    "kind_names",
    "kinds",
    "lazy_providers",
    "load_adapter",
    "reply_route",
    "tmux_servers",
]


def default_providers(env: Mapping[str, str] | None = None) -> list[KindProvider]:
    """Every registered kind's providers, configured from `env` (default: os.environ).

    They share one PaneRoster, so a refresh lists each tmux server and scans /proc once.
    """
    environ = dict(os.environ if env is None else env)
    roster = PaneRoster(env=environ)
    return [p for k in kinds() for p in k.discovery.providers(environ, roster)]


def lazy_providers(env: Mapping[str, str] | None = None) -> list[Provider]:
    """`default_providers`, one per registered kind, each importing its kind's package on first use.

    Why: a session discovers only the kind a send names (session/core/finder.py); building every kind's
    providers first imported every agent package before the plan of a send to one of them."""
    environ = dict(os.environ if env is None else env)
    roster = PaneRoster(env=environ)
    return [LazyKindProviders(name, environ, roster) for name in kind_names()]


class LazyKindProviders:
    """One registered kind's discovery (`kind`, `discover`), its providers made on first use."""

    def __init__(self, kind: str, env: Mapping[str, str], roster: PaneRoster) -> None:
        self.kind = kind
        self._env, self._roster = env, roster
        self._made: list[KindProvider] | None = None

    def __repr__(self) -> str:
        return f"<providers of {self.kind}{'' if self._made is not None else ' (not loaded)'}>"

    def providers(self) -> list[KindProvider]:
        if self._made is None:
            k = kind_for(self.kind)
            self._made = list(k.discovery.providers(self._env, self._roster)) if k is not None else []
        return self._made

    @property
    def waits_on_listing(self) -> bool:
        return any(getattr(p, "waits_on_listing", False) for p in self.providers())

    async def discover(self) -> list[Target]:
        return [t for p in self.providers() for t in await p.discover()]


def detect_me(env: Mapping[str, str] | None = None) -> Me | None:
    """Our own address when this process runs inside an agent session (seed §1), else None.

    Each kind says from its own evidence; the first registered kind (in name order) that
    recognises its session wins."""
    environ = dict(os.environ if env is None else env)
    for k in kinds():
        me = k.discovery.own_address(environ)
        if me is not None:
            return me
    return None


def agent_for(kind: str) -> AgentKind | None:
    """The agent of a Target kind (what transports ask instead of branching on the kind), or None."""
    return kind_for(kind)


def reply_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """How `target` will answer a want=reply|ack message, as its agent kind says.

    A kind with no package of its own gets the route any process has: `relay reply`.
    """
    k = kind_for(target.kind)
    if k is not None:
        return k.replies.route(target, ctx)
    from relay_repl.core.plan import relay_reply_route
    from relay_repl.core.reply_words import IDENTIFIED

    return relay_reply_route(target.spec, ctx, IDENTIFIED)
