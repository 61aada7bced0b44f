"""Codex: everything relay_repl knows about it, in one package.

- `provider`: discovery (session index, state and goals databases, thread-writer
  locks, the app-server daemon's status API, which pane runs which thread);
- `evidence`: the receiver's evidence readers (queue read-back from queue_1.sqlite,
  the rollout's queue turns and typed items);
- `agent`: `CodexAgent`, what transports ask (the `Agent` protocol).
The screen classifier is `relay_repl.agents.screens.codex` (named by the adapter,
adapters/codex.md, which also holds the footer pattern and the verified versions).
"""

from __future__ import annotations

from relay_repl.agents.codex.agent import CodexAgent
from relay_repl.agents.codex.evidence import (
    codex_home,
    codex_typed_items,
    RolloutScan,
    find_in_rollout,
    read_item,
    rollout_for,
    turns_since,
)
from relay_repl.agents.codex.native import codex_command_env, native_codex
from relay_repl.agents.codex.provider import (
    KIND,
    reply_route,
    CodexProvider,
    DaemonError,
    collaboration_mode,
    daemon_thread_status,
    footer_thread_name,
    is_codex_argv,
    is_codex_tui,
    read_session_index,
    scan_rollouts,
)

__all__ = ["KIND", "reply_route", "CodexAgent", "RolloutScan", "codex_command_env", "native_codex", "CodexProvider", "DaemonError", "codex_home", "codex_typed_items",
           "collaboration_mode", "daemon_thread_status", "find_in_rollout", "footer_thread_name", "is_codex_argv",
           "is_codex_tui", "read_item", "read_session_index", "rollout_for", "scan_rollouts", "turns_since"]
