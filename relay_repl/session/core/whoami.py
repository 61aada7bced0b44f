"""Own address (seed section 1): who am I, in a form a peer can answer to.

- Inside Codex: `$CODEX_THREAD_ID` (injected into every command Codex runs).
  Never `$TMUX_PANE` there: Codex commands inherit the daemon's environment,
  which can name another session's pane (codex.md section 1).
- Inside Claude Code: the session's name from its live registry record
  (`$CFG/sessions/$CLAUDE_PID.json`), inbox `$CLAUDE_CODE_MESSAGING_SOCKET`.
- Otherwise: the operator, `user.host.pid`, whose inbox is the REPL's socket.

The agent-specific rules live with each adapter (`agents.detect_me`). `relay reply` asks
`own_sender` instead: the same answer, from each kind's standard-library rule (entry-point group
`relay_repl.own_address`, loaded by file) without importing the agents package, which is most of
that process's start (issue 33); a kind whose rule cannot say (a Claude or Gemini session, a kind
that declares none) is asked through the package, as `own_address` asks it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from relay_repl.core.target import Me

OWN_GROUP = "relay_repl.own_address"


def own_address(environ: dict[str, str] | None = None) -> Me:
    from relay_repl.agents import detect_me
    from relay_repl.core.target import Me

    return detect_me(environ) or Me(address=default_address())


def default_address() -> str:
    """The operator's address until an inbox is registered: user.host.pid."""
    import socket

    user = os.environ.get("USER") or "operator"
    return f"{user}.{socket.gethostname().split('.')[0]}.{os.getpid()}"


class OwnAddress(NamedTuple):
    """`Me`'s fields as `relay reply` needs them (the sender it writes, the address its ids carry)."""

    role: str
    agent: str
    address: str
    inbox: str | None = None

    @property
    def sender(self) -> str:
        return f"{self.role}:{self.agent}@{self.address}"


def own_sender(environ: dict[str, str] | None = None) -> OwnAddress | Me:
    """`own_address(environ)`, decided by the kinds' standard-library rules when each can say; else
    (a rule says "ask", is missing, or fails) by `own_address` itself. Kinds are asked in name order
    and the first in whose session this process runs wins, as `agents.detect_me` asks them."""
    got = by_rules(environ)
    return own_address(environ) if got is None else got


def by_rules(environ: dict[str, str] | None = None) -> OwnAddress | None:
    """What the kinds' standard-library rules alone say (`own_sender`), or None where only the
    kinds' package can (a rule says "ask", is missing or fails; no kinds registered)."""
    from relay_repl.system.kind_rules import kind_rules

    env = dict(os.environ if environ is None else environ)
    rules = kind_rules(OWN_GROUP)
    if not rules:
        return None  # the registry's own refusal: no kinds registered
    for name, rule in rules:
        if rule is None:
            return None
        try:
            got = rule(env)
        except Exception:  # noqa: BLE001 - the kind's own rule, through the package, says what is wrong
            return None
        if got is None:
            continue
        if (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], str) and got[0]
                and (got[1] is None or isinstance(got[1], str))):
            return OwnAddress("agent", name, got[0], got[1])
        return None  # "ask": the kind decides
    return OwnAddress("operator", "relay", default_address())
