"""Which reply routes a Codex thread's configuration allows, and where its turn reply is read.

A Codex agent under the default `workspace-write` sandbox cannot run `relay reply` (the sandbox
refuses the AF_UNIX connect to the operator's inbox, EPERM, measured), but it can call an MCP
tool, because Codex starts MCP servers outside its sandbox; its final message is in its rollout
whatever it may run. Read-only: config files and registry fields, nothing started or written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay_repl.agents.codex import plan_words
from relay_repl.agents.codex.config_file import codex_config
from relay_repl.agents.codex.evidence import codex_home
from relay_repl.agents.codex.rollout import CodexTurnWatch, rollout_path
from relay_repl.agents.replies import (
    Default,
    ReplyOptions,
    configured_route,
    delivery_evidence,
)
from relay_repl.agents.turn_reply import TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import FileProblem
from relay_repl.core.plan import ReplyContext, ReplyRoute
from relay_repl.core.target import Target

def _codex_config(target: Target) -> tuple[dict[str, Any], Path]:
    """The thread's config.toml (parsed once per version of the file: agents/codex/config_file.py);
    {} when it is missing or unreadable, as Codex's defaults then apply."""
    home = codex_home(target)
    try:
        cfg = codex_config(home, plan_words.CONFIG_FIX)
    except FileProblem:
        cfg = None
    return cfg or {}, home / "config.toml"


def codex_options(target: Target) -> ReplyOptions:
    """From `$CODEX_HOME/config.toml` (the daemon's configuration for its threads): the rules are
    plan_words.reply_options (one home, which a plan printed before the models reads too)."""
    cfg, path = _codex_config(target)
    rollout = target.evidence_file
    return ReplyOptions(**plan_words.reply_options(cfg, str(path), str(rollout) if rollout else None, target.address))


def codex_watch(target: Target, delivery: Delivery) -> TurnWatch | None:
    client_id = delivery_evidence(delivery, "client_id")
    # a thread's rollout is created at its first turn: look again now if discovery saw none
    found = rollout_path(codex_home(target), target.address,
                         delivery_evidence(delivery, "rollout") or target.evidence_file)
    if found is None:
        return None
    rollout = str(found)
    payload = delivery.plan.payload if delivery.plan else None
    if not client_id and not payload:
        return None
    return CodexTurnWatch(rollout, client_id=client_id, text=None if client_id else payload)


MCP_FIRST = plan_words.MCP_FIRST


def codex_route(target: Target, ctx: ReplyContext, default: Default) -> ReplyRoute:
    """Where no sandbox is in the way: relay_reply on the relay MCP server when configured (and not
    certain to be refused), with `relay reply` as the alternative, else `relay reply`; under a
    sandbox: relay_reply on the relay MCP server, else the turn reply."""
    opts = codex_options(target)
    return configured_route(target, ctx, opts, default, mcp_refused=plan_words.mcp_refused(opts.model_dump()),
                            mcp_first=MCP_FIRST)
