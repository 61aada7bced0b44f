"""Own address (seed section 1): who am I, in a form a peer can answer to.

- Inside Codex: `$CODEX_THREAD_ID` (injected into every command Codex runs).
  Never `$TMUX_PANE` there: Codex commands inherit the daemon's environment,
  which can name another session's pane (codex.md section 1).
- Inside Claude Code: the session's name from its live registry record
  (`$CFG/sessions/$CLAUDE_PID.json`), inbox `$CLAUDE_CODE_MESSAGING_SOCKET`.
- Otherwise: the operator, `user.host.pid`, whose inbox is the REPL's socket.

The agent-specific rules live with each adapter (`agents.detect_me`).
"""

from __future__ import annotations

from relay_repl.core.target import Me


def own_address(environ: dict[str, str] | None = None) -> Me:
    from relay_repl.agents import detect_me
    from relay_repl.session.shared import default_me

    return detect_me(environ) or default_me()
