"""Which reply routes an agent's own configuration allows, and where its turn reply is read.

Why a route depends on configuration, not on the kind alone: a Codex agent under the
default `workspace-write` sandbox cannot run `relay reply` (the sandbox refuses the
AF_UNIX connect to the operator's inbox, EPERM, measured), but it can call an MCP
tool, because Codex starts MCP servers outside its sandbox; and every agent's final
message is in its own rollout or transcript whatever it may run. So the session asks
here, and the plan names the route that will actually work.

Read-only: config files and registry fields are read, nothing is started or written.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.agents.claude_transcript import ClaudeTurnWatch
from relay_repl.agents.codex_rollout import CodexTurnWatch, rollout_path
from relay_repl.agents.turn_reply import TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import UsageError
from relay_repl.core.plan import ReplyContext, ReplyRoute
from relay_repl.core.target import Target

RouteName = Literal["relay-reply", "mcp", "turn"]
VIAS = ("native", "relay-reply", "mcp", "turn")
MCP_TOOL = "relay_reply"
SANDBOXED = ("workspace-write", "read-only")


class ReplyOptions(BaseModel):
    """What one target can answer through, each with the evidence for it."""

    model_config = ConfigDict(frozen=True)

    relay_reply: bool = Field(description="its agent may run `relay reply` (no sandbox in the way)")
    relay_reply_why: str = ""
    mcp: str | None = Field(default=None, description="where the relay MCP server is configured, if it is")
    mcp_note: str | None = Field(default=None, description="why an MCP call could still be refused")
    turn: str | None = Field(default=None, description="the file its turn reply is read from (may not exist yet)")
    turn_why: str = ""

    def describe(self, route: RouteName, relay_id: str = "<relay id>") -> str:
        """The plan's words for one route."""
        if route == "mcp":
            note = f" ({self.mcp_note})" if self.mcp_note else ""
            return (f"the agent calls relay_reply (relay_id={relay_id}) on the relay MCP server ({self.mcp}), which "
                    f"writes into this inbox; started by the agent outside its sandbox{note}")
        if route == "turn":
            return (f"turn reply: the agent's own final message in the turn our message starts, read from "
                    f"{self.turn} ({self.turn_why}); no tool or permission needed, provenance: receiver's own record")
        return f"`relay reply {relay_id} TEXT` run by the agent ({self.relay_reply_why})"


def _is_relay_mcp(command: Any, args: Any) -> bool:
    """A server entry that runs `relay mcp` (or `python -m relay_repl mcp`)."""
    if not isinstance(command, str):
        return False
    argv = [os.path.basename(command), *(a for a in args or [] if isinstance(a, str))]
    return "mcp" in argv[1:] and (argv[0] == "relay" or "relay_repl" in argv)


def _relay_servers(servers: Any) -> list[str]:
    if not isinstance(servers, dict):
        return []
    return [name for name, s in servers.items()
            if isinstance(s, dict) and s.get("enabled", True) is not False
            and _is_relay_mcp(s.get("command"), s.get("args"))]


# -- Codex ---------------------------------------------------------------------------------


def _codex_config(target: Target) -> tuple[dict[str, Any], Path]:
    home = Path(target.detail.get("codex_home") or os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    path = home / "config.toml"
    try:
        return tomllib.loads(path.read_text()), path
    except (OSError, ValueError):
        return {}, path


def codex_options(target: Target) -> ReplyOptions:
    """From `$CODEX_HOME/config.toml` (the daemon's configuration for its threads)."""
    cfg, path = _codex_config(target)
    sandbox = str(cfg.get("sandbox_mode") or "workspace-write")  # Codex's default when unset
    unsandboxed = sandbox not in SANDBOXED
    why = (f"sandbox_mode {sandbox} in {path} lets its commands reach the inbox socket" if unsandboxed else
           f"sandbox_mode {sandbox} in {path}: the sandbox refuses the unix socket `relay reply` writes to")
    servers = _relay_servers(cfg.get("mcp_servers"))
    mcp = note = None
    if servers:
        name = servers[0]
        mcp = f"[mcp_servers.{name}] in {path}"
        entry = cfg["mcp_servers"][name]
        tools = entry.get("tools") if isinstance(entry.get("tools"), dict) else {}
        tool_mode = (tools.get(MCP_TOOL) or {}).get("approval_mode") if isinstance(tools.get(MCP_TOOL), dict) else None
        mode = tool_mode or entry.get("default_tools_approval_mode")
        if cfg.get("approval_policy") == "never" and mode != "approve":
            note = ('approval_policy is "never" and relay_reply is not pre-approved (default_tools_approval_mode = '
                    '"approve"), so Codex refuses the call')
        elif mode != "approve":
            note = "Codex may ask the operator to approve the relay_reply call in the agent's pane"
    rollout = target.detail.get("rollout")
    return ReplyOptions(relay_reply=unsandboxed, relay_reply_why=why, mcp=mcp, mcp_note=note,
                        turn=str(rollout) if rollout else f"thread {target.address}'s rollout (written at its first turn)",
                        turn_why="the task_complete of the turn whose user message has our queue item's client_id")


def codex_watch(target: Target, delivery: Delivery) -> TurnWatch | None:
    client_id, rollout = _evidence(delivery, "client_id"), _evidence(delivery, "rollout") or target.detail.get("rollout")
    if not rollout:  # a thread's rollout is created at its first turn: look again now
        home = Path(target.detail.get("codex_home") or os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        found = rollout_path(home, target.address)
        rollout = str(found) if found else None
    if not rollout:
        return None
    payload = delivery.plan.payload if delivery.plan else None
    if not client_id and not payload:
        return None
    return CodexTurnWatch(rollout, client_id=client_id, text=None if client_id else payload)


# -- Claude Code -----------------------------------------------------------------------------


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
            if _relay_servers(data.get("mcpServers")):
                return f"--mcp-config {src if len(src) < 80 else '(inline)'}"
    record = target.detail.get("record")
    cfg_dir = Path(record).parent.parent if record else None
    for cfg in [p for p in ((cfg_dir / ".claude.json") if cfg_dir else None, Path.home() / ".claude.json") if p]:
        try:
            data = json.loads(cfg.read_text())
        except (OSError, ValueError):
            continue
        cwd = target.detail.get("cwd")
        project = (data.get("projects") or {}).get(cwd) if cwd else None
        for scope, servers in (("user", data.get("mcpServers")), ("project", (project or {}).get("mcpServers"))):
            if _relay_servers(servers):
                return f"{scope} mcpServers in {cfg}"
    return None


def claude_options(target: Target) -> ReplyOptions:
    transcript = target.detail.get("transcript")
    return ReplyOptions(relay_reply=True, relay_reply_why="Claude Code runs Bash unsandboxed by default",
                        mcp=_claude_mcp(target),
                        turn=str(transcript) if transcript else None,
                        turn_why="the end_turn message of the turn that read the record carrying our msg_id")


def claude_watch(target: Target, delivery: Delivery) -> TurnWatch | None:
    transcript = _evidence(delivery, "transcript") or target.detail.get("transcript")
    if not transcript:
        return None
    msg_id = delivery.extra.get("msg_id")
    payload = delivery.plan.payload if delivery.plan else None
    if not msg_id and not payload:
        return None
    return ClaudeTurnWatch(transcript, msg_id=msg_id, text=None if msg_id else payload)


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


def _forced(target: Target, ctx: ReplyContext, opts: ReplyOptions, default: Default) -> ReplyRoute | None:
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


def codex_route(target: Target, ctx: ReplyContext, default: Default) -> ReplyRoute:
    """`relay reply` where no sandbox is in the way; else relay_reply on the relay MCP server
    (when configured and not certain to be refused); else the turn reply."""
    opts = codex_options(target)
    forced = _forced(target, ctx, opts, default)
    if forced is not None:
        return forced
    if opts.relay_reply:
        return default(target, ctx)
    mcp = mcp_route(target, ctx, opts)
    if mcp.ok and not (opts.mcp_note and "refuses" in opts.mcp_note):
        return mcp
    return turn_route(target, ctx, opts)


def claude_route(target: Target, ctx: ReplyContext, default: Default) -> ReplyRoute:
    """Native SendMessage to the listed inbox. When the inbox is not listed, that route is
    still the one offered (listing it opens it); only if the operator declines does the
    session fall back, to relay_reply on the relay MCP server, else the turn reply."""
    opts = claude_options(target)
    forced = _forced(target, ctx, opts, default)
    if forced is not None:
        return forced
    return default(target, ctx)


# -- dispatch --------------------------------------------------------------------------------


def _evidence(delivery: Delivery, key: str) -> str | None:
    """The newest value a delivery stage recorded under `key` (extra first)."""
    if delivery.extra.get(key):
        return str(delivery.extra[key])
    for ev in reversed(delivery.evidence):
        if ev.data.get(key):
            return str(ev.data[key])
    return None


def reply_options(target: Target) -> ReplyOptions | None:
    if target.kind == "codex":
        return codex_options(target)
    if target.kind == "claude-code":
        return claude_options(target)
    return None


def turn_watch(target: Target, delivery: Delivery) -> TurnWatch | None:
    """A watcher for the turn `delivery` started in `target`, or None when this kind keeps no record we read."""
    if target.kind == "codex":
        return codex_watch(target, delivery)
    if target.kind == "claude-code":
        return claude_watch(target, delivery)
    return None
