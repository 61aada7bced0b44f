"""Own address (seed section 1): who am I, in a form a peer can answer to.

- Inside Codex: `$CODEX_THREAD_ID` (injected into every command Codex runs).
  Never `$TMUX_PANE` there: Codex commands inherit the daemon's environment,
  which can name another session's pane (codex.md section 1).
- Inside Claude Code: the session's name from its registry record
  (`$CFG/sessions/$CLAUDE_PID.json`), inbox `$CLAUDE_CODE_MESSAGING_SOCKET`.
- Otherwise: the operator, `user.host.pid`, whose inbox is the REPL's socket.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .target import Me


def claude_config_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def own_address(environ: dict[str, str] | None = None) -> Me:
    env = os.environ if environ is None else environ
    thread = env.get("CODEX_THREAD_ID")
    if thread:
        return Me(role="peer", agent="codex", address=thread, inbox=None)
    sock = env.get("CLAUDE_CODE_MESSAGING_SOCKET")
    if sock:
        name = None
        pid = env.get("CLAUDE_PID")
        if pid and pid.isdigit():
            cfg = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME", "~")).expanduser() / ".claude")
            try:
                name = json.loads((cfg / "sessions" / f"{pid}.json").read_text()).get("name")
            except (OSError, ValueError):
                name = None
        return Me(role="peer", agent="claude-code", address=name or sock, inbox=sock)
    from .session import default_me

    return default_me()
