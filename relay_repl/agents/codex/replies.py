"""Which reply routes a Codex thread's configuration allows, and where its turn reply is read.

A Codex agent under the default `workspace-write` sandbox cannot run `relay reply` (the sandbox
refuses the AF_UNIX connect to the operator's inbox, EPERM, measured), but it can call an MCP
tool, because Codex starts MCP servers outside its sandbox; its final message is in its rollout
whatever it may run. Read-only: config files and registry fields, nothing started or written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay_repl.agents.codex.config_file import codex_config
from relay_repl.agents.codex.evidence import codex_home
from relay_repl.agents.codex.rollout import CodexTurnWatch, rollout_path
from relay_repl.agents.replies import (
    Default,
    ReplyOptions,
    configured_route,
    delivery_evidence,
    relay_server,
)
from relay_repl.agents.turn_reply import TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import FileProblem
from relay_repl.core.mcp_names import MCP_TOOL
from relay_repl.core.plan import ReplyContext, ReplyRoute
from relay_repl.core.target import Target

SANDBOXED = ("workspace-write", "read-only")


def _codex_config(target: Target) -> tuple[dict[str, Any], Path]:
    """The thread's config.toml (parsed once per version of the file: agents/codex/config_file.py);
    {} when it is missing or unreadable, as Codex's defaults then apply."""
    home = codex_home(target)
    try:
        cfg = codex_config(home, "fix it: Codex reads its sandbox and MCP servers there")
    except FileProblem:
        cfg = None
    return cfg or {}, home / "config.toml"


def codex_options(target: Target) -> ReplyOptions:
    """From `$CODEX_HOME/config.toml` (the daemon's configuration for its threads)."""
    cfg, path = _codex_config(target)
    sandbox = str(cfg.get("sandbox_mode") or "workspace-write")  # Codex's default when unset
    unsandboxed = sandbox not in SANDBOXED
    why = (f"sandbox_mode {sandbox} in {path} lets its commands reach the inbox socket" if unsandboxed else
           f"sandbox_mode {sandbox} in {path}: the sandbox refuses the unix socket `relay reply` writes to")
    found = relay_server(cfg.get("mcp_servers"))
    mcp = note = None
    if found:
        name, entry = found
        mcp = f"[mcp_servers.{name}] in {path}"
        tools: dict[str, Any] = entry["tools"] if isinstance(entry.get("tools"), dict) else {}
        tool_mode = (tools.get(MCP_TOOL) or {}).get("approval_mode") if isinstance(tools.get(MCP_TOOL), dict) else None
        mode = tool_mode or entry.get("default_tools_approval_mode")
        if cfg.get("approval_policy") == "never" and mode != "approve":
            note = ('approval_policy is "never" and relay_reply is not pre-approved (default_tools_approval_mode = '
                    '"approve"), so Codex refuses the call')
        elif mode != "approve":
            note = "Codex may ask the operator to approve the relay_reply call in the agent's pane"
    rollout = target.evidence_file
    return ReplyOptions(relay_reply=unsandboxed, relay_reply_why=why, mcp=mcp, mcp_note=note,
                        turn=str(rollout) if rollout else f"thread {target.address}'s rollout (written at its first turn)",
                        turn_why="the task_complete of the turn whose user message has our queue item's client_id")


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


# A Codex offered the relay MCP server answers with its relay_reply tool even where its shell could
# run `relay reply` (the lab's Codex agents, unsandboxed, do: converse.py picks the tool when listed),
# so where both are open the plan names relay_reply first and `relay reply` as the alternative.
MCP_FIRST = True


def codex_route(target: Target, ctx: ReplyContext, default: Default) -> ReplyRoute:
    """Where no sandbox is in the way: relay_reply on the relay MCP server when configured (and not
    certain to be refused), with `relay reply` as the alternative, else `relay reply`; under a
    sandbox: relay_reply on the relay MCP server, else the turn reply."""
    opts = codex_options(target)
    return configured_route(target, ctx, opts, default, mcp_refused=bool(opts.mcp_note and "refuses" in opts.mcp_note),
                            mcp_first=MCP_FIRST)
