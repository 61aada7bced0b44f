"""Which reply routes a Claude Code session's configuration allows, and where its turn reply is read.

Claude runs Bash unsandboxed by default (so `relay reply` works), may have the relay MCP server
in its `--mcp-config` or `.claude.json`, and its final message is in its transcript.
Read-only: config files and registry fields, nothing started or written.
"""

from __future__ import annotations

import json
from pathlib import Path

from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code.transcript import ClaudeTurnWatch
from relay_repl.agents.replies import Default, ReplyOptions, delivery_evidence, forced_route
from relay_repl.core.reply_words import relay_servers
from relay_repl.agents.turn_reply import TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.plan import ReplyContext, ReplyRoute
from relay_repl.core.target import Target


def _claude_mcp(target: Target) -> str | None:
    """The relay MCP server in the session's `--mcp-config` file or its `.claude.json`."""
    from relay_repl.system.proc import read_cmdline

    argv = read_cmdline(target.pid) if target.pid else None
    for i, arg in enumerate(argv or []):
        if arg == "--mcp-config" and i + 1 < len(argv or []):
            src = (argv or [])[i + 1]
            try:
                data = json.loads(src) if src.lstrip().startswith("{") else json.loads(Path(src).read_text())
            except (OSError, ValueError):
                continue
            if relay_servers(data.get("mcpServers")):
                return f"--mcp-config {src if len(src) < 80 else '(inline)'}"
    record = ClaudeDetail.of(target).record
    cfg_dir = Path(record).parent.parent if record else None
    for cfg in [p for p in ((cfg_dir / ".claude.json") if cfg_dir else None, Path.home() / ".claude.json") if p]:
        try:
            data = json.loads(cfg.read_text())
        except (OSError, ValueError):
            continue
        cwd = ClaudeDetail.of(target).cwd
        project = (data.get("projects") or {}).get(cwd) if cwd else None
        for scope, servers in (("user", data.get("mcpServers")), ("project", (project or {}).get("mcpServers"))):
            if relay_servers(servers):
                return f"{scope} mcpServers in {cfg}"
    return None


def claude_options(target: Target) -> ReplyOptions:
    transcript = target.evidence_file
    return ReplyOptions(relay_reply=True, relay_reply_why="Claude Code runs Bash unsandboxed by default",
                        mcp=_claude_mcp(target),
                        turn=str(transcript) if transcript else None,
                        turn_why="the end_turn message of the turn that read the record carrying our msg_id")


def claude_watch(target: Target, delivery: Delivery) -> TurnWatch | None:
    transcript = delivery_evidence(delivery, "transcript") or target.evidence_file
    if not transcript:
        return None
    msg_id = delivery.extra.msg_id
    payload = delivery.plan.payload if delivery.plan else None
    if not msg_id and not payload:
        return None
    return ClaudeTurnWatch(transcript, msg_id=msg_id, text=None if msg_id else payload)


def claude_route(target: Target, ctx: ReplyContext, default: Default) -> ReplyRoute:
    """Native SendMessage to the listed inbox. When the inbox is not listed, that route is
    still the one offered (listing it opens it); only if the operator declines does the
    session fall back, to relay_reply on the relay MCP server, else the turn reply."""
    opts = claude_options(target)
    forced = forced_route(target, ctx, opts, default)
    if forced is not None:
        return forced
    return default(target, ctx)
