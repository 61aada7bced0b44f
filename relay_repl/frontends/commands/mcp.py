"""`relay mcp`: the relay MCP server on stdio (how a sandboxed agent replies)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse


def register(sub: Any) -> None:
    """Add `relay mcp` to the subparsers."""
    # here, not at the top (kind_words imports argparse): `relay mcp` itself (frontends/entry.py) never parses
    from relay_repl.frontends.kind_words import KindsRawHelp

    s = sub.add_parser(
        "mcp",
        help="run the relay MCP server on stdio (how a sandboxed agent replies)",
        description="Run a stdio MCP server with two tools: relay_reply (relay_id, text), which does what "
        "`relay reply` does, and relay_requests, which lists the open requests (read-only). Codex and Claude "
        "Code start MCP servers outside their sandbox, so this works under Codex's workspace-write sandbox, "
        "where `relay reply` cannot reach the inbox socket. Add it once (each kind says how):\n"
        "{mcp_setup}\n"
        "It is started by the agent, not by you: run by hand it waits for MCP JSON-RPC on stdin.",
        formatter_class=KindsRawHelp,
    )
    s.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace | None) -> int:
    from relay_repl.session.mcp.mcp_server import serve

    if sys.stdin.isatty():
        print("relay mcp: an MCP server on stdio, started by an agent (see `relay mcp --help` for the config "
              "lines); waiting for JSON-RPC on stdin, Ctrl-D ends it", file=sys.stderr)
    return serve()
