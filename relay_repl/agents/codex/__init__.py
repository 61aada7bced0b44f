"""Codex: everything relay_repl knows about it, in one package.

- `provider`: discovery (session index, state and goals databases, thread-writer
  locks, the app-server daemon's status API, which pane runs which thread);
- `evidence`: the receiver's evidence readers (queue read-back from queue_1.sqlite,
  the rollout's queue turns and typed items);
- `agent`: `CodexScreen`, `CodexEvidence`: what transports ask (its screen and evidence);
- `screen`: the screen classifier (named by the adapter, adapters/codex.md, which
  also holds the footer pattern and the verified versions);
- `kind`: `CodexKind`, the `AgentKind` the registry loads (entry point `codex`).

`codex queue` (0.171.0) reaches the thread only through the daemon of its own CODEX_HOME
(control socket /tmp/codex-daemon-<uid>/<sha256 of the link path>, one per home): when that
daemon does not answer within 10 s (starved, stopped) it exits 1 with "cannot queue through an
embedded app server while a local app-server daemon is running" (adapters/codex.md, Gaps).
"""

from __future__ import annotations

from relay_repl.agents.codex.agent import CodexEvidence, CodexScreen
from relay_repl.agents.codex.evidence import (
    codex_home,
    codex_typed_items,
    RolloutScan,
    find_in_rollout,
    read_item,
    turns_since,
)
from relay_repl.agents.codex.native import codex_command_env, native_codex
from relay_repl.agents.codex.rollout import rollout_path, scan_rollouts
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

)

__all__ = ["KIND", "reply_route", "CodexScreen", "CodexEvidence", "RolloutScan", "codex_command_env", "native_codex", "CodexProvider", "DaemonError", "codex_home", "codex_typed_items",
           "collaboration_mode", "daemon_thread_status", "find_in_rollout", "footer_thread_name", "is_codex_argv",
           "is_codex_tui", "read_item", "read_session_index", "rollout_path", "scan_rollouts", "turns_since"]
