"""Claude Code: everything relay_repl knows about it, in one package.

- `provider`: discovery (`claude agents --json` + `sessions/<pid>.json`, the kernel
  liveness rule, the pane whose `#{pane_pid}` is the session), transcript paths;
- `evidence`: the receiver's evidence readers (transcript origins, typed records,
  registry status, peer token);
- `peer`: listing the operator's inbox as a Claude peer;
- `agent`: `ClaudeScreen`, `ClaudeEvidence`: what transports ask (its screen and evidence);
- `screen`: the screen classifier (named by the adapter, adapters/claude-code.md,
  which also holds the verified versions);
- `kind`: `ClaudeCodeKind`, the `AgentKind` the registry loads (entry point `claude-code`).
"""

from __future__ import annotations

from relay_repl.agents.claude_code.agent import ClaudeEvidence, ClaudeScreen
from relay_repl.agents.claude_code.evidence import (
    claude_typed_records,
    find_origin_records,
    peer_token,
    record_status,
    transcript_for,
)
from relay_repl.agents.claude_code.provider import (
    KIND,
    reply_route,
    ClaudeProvider,
    ListedAgent,
    SessionRecord,
    munge_cwd,
    socket_is_ours,
    transcript_path,
)

__all__ = ["KIND", "reply_route", "ClaudeScreen", "ClaudeEvidence", "ClaudeProvider", "ListedAgent", "SessionRecord", "claude_typed_records",
           "find_origin_records", "munge_cwd", "peer_token", "record_status", "socket_is_ours", "transcript_for",
           "transcript_path"]
