"""How the lab runs Gemini CLI offline: its `LabDriver` (agents/kind.py), loaded only by the lab."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from relay_repl.agents.gemini_cli.chats import HOME_ENV, find_chat
from relay_repl.agents.gemini_cli.provider import BINARY, HEADLESS_ENV
from relay_repl.agents.gemini_cli.screen import classify, footer_session
from relay_repl.agents.kind import LAB_HOME, LabCall, LabContext, LabDriverBase, LabLaunch, LabPane, LabReady, LabSpec
from relay_repl.agents.screens.model import Snapshot

LAB_MODEL = "gemini-2.5-pro"
MCP_SERVER = "relay"
SHELL_TOOL = "run_shell_command"
"""Gemini CLI's shell tool: `{command, description}`."""


def mcp_answered_dir(ctx: LabContext) -> Path:
    """Where the lab's relay MCP servers record what they answered (system/mcp_answered.py)."""
    return ctx.root / "run" / "mcp-answered"


def lab_settings(mcp_command: Sequence[str], answered_dir: Path | None = None) -> dict[str, Any]:
    """The lab's `settings.json` (adapters/gemini-cli.md GM §1): offline and quiet, the session id in
    the footer (ties a pane to its chat file exactly), one model (no routing request per turn), and
    the relay MCP server trusted (no approval box for relay_reply), told where to record its answers
    (`answered_dir`: the lab's readiness waits for its tools/list answer, GM §6)."""
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False, "hasSeenNudge": True},
        "ui": {"hideTips": True, "footer": {"items": ["workspace", "model-name", "session-id"]}},
        "model": {"name": LAB_MODEL},
    }
    if mcp_command:
        server: dict[str, Any] = {"command": mcp_command[0], "args": list(mcp_command[1:]), "trust": True}
        if answered_dir is not None:
            from relay_repl.system.mcp_answered import ENV

            server["env"] = {ENV: str(answered_dir)}
        settings["mcpServers"] = {MCP_SERVER: server}
    return settings


def mcp_discovered(answered_dir: Path, pane_pid: int) -> int | None:
    """The pid of a relay MCP server started by the Gemini under `pane_pid` (the wrapper or its
    worker) that has answered `tools/list`, or None. The relay server offers tools only, so
    tools/list is the last request of Gemini's discovery of it [B: `discoverInto` asks prompts/list
    and resources/list only of a server whose capabilities name them]."""
    from relay_repl.system.mcp_answered import answered
    from relay_repl.system.proc import descendants, process_table

    if not answered_dir.is_dir():
        return None
    if not answered(answered_dir, "tools/list"):  # cheap: the process table is read once a record exists
        return None
    recs = answered(answered_dir, "tools/list", set(descendants(pane_pid, process_table())))
    return int(recs[0]["pid"]) if recs else None


class GeminiLab(LabDriverBase):
    # its client home is the lab's $HOME (state under ~/.gemini): every lab process and `relay lab env`
    # get GEMINI_CLI_HOME pointing there, so `relay --lab doctor` reads it, not the operator's ~/.gemini
    spec = LabSpec(count_flag="gemini", default_count=0, stub_api="google", help="Gemini CLI sessions",
                   homes={HOME_ENV: LAB_HOME})

    def files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        settings = lab_settings(ctx.mcp_command, mcp_answered_dir(ctx))
        return {ctx.home / ".gemini" / "settings.json": json.dumps(settings, indent=1) + "\n"}

    def launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        """`gemini --approval-mode yolo` in work/<name>: the lab's netns keeps commands off the network,
        as Codex's `danger-full-access` does, and the stub decides what runs."""
        env = {"GEMINI_API_KEY": ctx.api_key, "COLORTERM": "truecolor"}  # GEMINI_CLI_HOME: its LabSpec homes
        if name in ctx.base_urls:
            env["GOOGLE_GEMINI_BASE_URL"] = ctx.base_urls[name]
        return LabLaunch(command=(str(ctx.bin_dir / BINARY), "--approval-mode", "yolo"), env=env, unset=HEADLESS_ENV)

    def ready(self, ctx: LabContext, name: str, pane: LabPane) -> LabReady | None:
        """Ready when the screen reads idle with an empty composer, the footer names a chat file, and
        (with the relay MCP server configured) that server, started by this pane's Gemini, has answered
        its tools/list: Gemini CLI 0.61.0 queues every prompt until its MCP discovery completes and its
        screen does not show that discovery, while the chat file is written before it ends (GM §6)."""
        snap = Snapshot(lines=pane.screen.split("\n"))
        sid = footer_session(snap)
        if sid is None or classify(snap).kind != "idle":
            return None
        chat = find_chat(ctx.home / ".gemini", sid)
        if chat is None:
            return None
        note = f"gemini pid {pane.pane_pid} session {sid} idle"
        if ctx.mcp_command:
            server = mcp_discovered(mcp_answered_dir(ctx), pane.pane_pid)
            if server is None:
                return None
            note += f", its relay MCP server (pid {server}) answered tools/list"
        # focused: unfocused (tmux focus-out to a detached pane) it draws no cursor, and relay refuses to type
        return LabReady(pid=pane.pane_pid, address=chat.session_id, evidence_file=str(chat.path),
                        note=note, focus_in=True)

    def shell_call(self, cmd: str, why: str) -> LabCall | None:
        """`cmd` through Gemini CLI's shell tool, described by `why` (the relay id it answers)."""
        return LabCall(name=SHELL_TOOL, input={"command": cmd, "description": f"answer relay message {why}"})
