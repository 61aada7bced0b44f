"""Whether this process is surely in no agent session, from each kind's cheap negative rule.

Why: `relay serve --stdio` (a host's relay, one process per ssh channel), the operator's request
commands (`relay approve`, `deny`, `requests`) and `relay ask` from a shell no agent started each
ask "does this process run inside an agent session?" before anything else, and the full judge
(agents/origin.py `OriginJudge`) imports pydantic, the adapters and every kind: ~120 ms of a
~200 ms start, only to hear "no" (issue 33). Each kind declares, in the entry-point group
`relay_repl.surely_outside`, a standard-library rule loaded by file (as `relay reply` loads the
kinds' own-address rules, session/core/whoami.py): `surely_outside(chain, env)` is True only when no pid
of the chain can be one of its sessions as that kind's `identify_process` judges one.

The answer claims no more than its evidence: True ("surely outside every session") only when every
registered kind declares a rule and each says so; any kind without one, a rule that fails, or one
that cannot exclude, and the answer is False, which means "ask the full judge", never "inside".
Nothing here branches on a kind's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from relay_repl.system.kind_rules import OUTSIDE_GROUP, kind_rules

__all__ = ["OUTSIDE_GROUP", "kind_rules", "surely_outside_every_session"]


def surely_outside_every_session(pid: int | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """True when every registered kind's rule says no process of `pid`'s ancestry (default: this
    process's) is one of its sessions; False when the full judge must decide."""
    from relay_repl.system.proc import ancestors

    rules = kind_rules(OUTSIDE_GROUP)
    if not rules:
        return False  # no kinds registered: the judge's own answer (and its refusal) stands
    env = os.environ if environ is None else environ
    chain = ancestors(os.getpid() if pid is None else pid)
    if not chain:
        return False
    for _name, rule in rules:
        if rule is None:
            return False
        try:
            if rule(chain, env) is not True:
                return False
        except Exception:  # noqa: BLE001 - a rule that fails excludes nothing: the full judge decides
            return False
    return True
