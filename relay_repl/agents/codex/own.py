"""Codex's rule for "who am I" (seed section 1), standard library only.

Loaded by file by `relay reply` (session/core/whoami.py, entry-point group `relay_repl.own_address`),
without the agents package (pydantic and every agent module): Codex injects `$CODEX_THREAD_ID`
into every command it runs, so this process, started by a Codex tool call, is that thread.
Never `$TMUX_PANE` here: Codex commands inherit the daemon's environment, which can name
another session's pane (codex.md section 1). `CodexProvider.own_address` is this rule."""

from __future__ import annotations

from collections.abc import Mapping


def own_address(env: Mapping[str, str]) -> tuple[str, str | None] | None:
    """(address, inbox) of `agent:codex@<thread id>` when this process runs as a Codex tool command,
    else None."""
    tid = env.get("CODEX_THREAD_ID")
    return (tid, None) if tid else None
