"""Claude Code's first test of "who am I" (seed section 1), standard library only.

Loaded by file by `relay reply` (session/core/whoami.py, entry-point group `relay_repl.own_address`),
without the agents package: a process inside a Claude session has the session's inbox
(`$CLAUDE_CODE_MESSAGING_SOCKET`) and pid (`$CLAUDE_PID`) in its environment. Without them it is
not in one, said at once; with them the session's registry record decides, which the provider
reads and validates (`ClaudeProvider.own_address`, which asks `session_env` first)."""

from __future__ import annotations

from collections.abc import Mapping


def session_env(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(inbox socket, session pid) when `env` is a Claude session's, else None."""
    sock = env.get("CLAUDE_CODE_MESSAGING_SOCKET")
    pid = env.get("CLAUDE_PID")
    if not sock or not pid or not pid.isdigit():
        return None
    return sock, pid


def own_address(env: Mapping[str, str]) -> str | None:
    """None when this process is surely in no Claude session; "ask" when the kind must decide."""
    return "ask" if session_env(env) else None
