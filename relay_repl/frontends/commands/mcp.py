"""`relay mcp`: the relay MCP server on stdio (how a sandboxed agent replies)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse


def register(sub: Any) -> None:
    """Add `relay mcp` to the subparsers."""
    import argparse  # here, not at the top: `relay mcp` itself (frontends/entry.py) never parses

    s = sub.add_parser(
        "mcp",
        help="run the relay MCP server on stdio (how a sandboxed agent replies)",
        description="Run a stdio MCP server with two tools: relay_reply (relay_id, text), which does what "
        "`relay reply` does, and relay_requests, which lists the open requests (read-only). Codex and Claude "
        "Code start MCP servers outside their sandbox, so this works under Codex's workspace-write sandbox, "
        "where `relay reply` cannot reach the inbox socket. Add it once:\n"
        "  ~/.codex/config.toml:   [mcp_servers.relay]\n"
        "                          command = \"relay\"\n"
        "                          args = [\"mcp\"]\n"
        "  Claude Code:            claude mcp add relay -- relay mcp\n"
        "  ~/.gemini/settings.json: \"mcpServers\": {\"relay\": {\"command\": \"relay\", \"args\": [\"mcp\"]}}\n"
        "                          (with \"trust\": true Gemini CLI calls it without asking in the pane)\n"
        "It is started by the agent, not by you: run by hand it waits for MCP JSON-RPC on stdin.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace | None) -> int:
    from relay_repl.session.mcp_server import serve

    if sys.stdin.isatty():
        print("relay mcp: an MCP server on stdio, started by an agent (see `relay mcp --help` for the config "
              "lines); waiting for JSON-RPC on stdin, Ctrl-D ends it", file=sys.stderr)
    return serve()
