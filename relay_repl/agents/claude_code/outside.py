"""Claude Code's negative ancestry rule: "no process of this chain is a Claude session", from the
registry alone (standard library and store/adapter_files.py).

Loaded by file (entry-point group `relay_repl.surely_outside`, session/core/outside.py) before the
agents package, which imports pydantic and every kind (issue 33: an operator's command that
refuses to run inside an agent session paid ~120 ms for the full judge only to hear "no session").

A Claude session is a live `sessions/<pid>.json` record whose pid holds the listening socket it
names (`ClaudeProvider.identify_process`, claude-code.md sections 1.1 and 4.5): the record comes
first, so where no pid of the chain has a file by that name, no process of the chain is one. Any
such file (live or stale, valid or not) and this rule cannot exclude: the full judge reads it. It
never says a process IS inside a session."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from relay_repl.store.adapter_files import registry_path

KIND = "claude-code"  # this package's kind, as agent.py names it (this module is loaded without the package)


def surely_outside(chain: Sequence[int], environ: Mapping[str, str]) -> bool:
    """True when no pid of `chain` has a session record under `environ`'s Claude config dir; False
    when the full judge must look (a record exists, or the adapter could not be read plainly)."""
    record = registry_path(KIND, "session_record", environ)
    if record is None or "{pid}" not in record:
        return False
    return not any(os.path.lexists(record.replace("{pid}", str(pid))) for pid in chain)
