"""Gemini CLI's first test of "who am I" (seed section 1), and what a Gemini process is.

Standard library and system/proc.py only: loaded by file by `relay reply` (session/core/whoami.py,
entry-point group `relay_repl.own_address`), without the agents package. Gemini CLI gives its
tools no variable naming the session, so a session is found from our own ancestry: when no
ancestor runs Gemini CLI this process is in no Gemini session, said at once; otherwise the
provider matches the ancestor to a live session (`GeminiProvider.own_address`). The same fact is
Gemini's negative ancestry rule, `surely_outside` (entry-point group `relay_repl.surely_outside`,
session/core/outside.py), which lives here beside `is_gemini` since a module loaded by file imports no sibling."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from relay_repl.system.proc import ancestors, read_cmdline

SCRIPT = "gemini.js"


def is_gemini(argv: list[str] | None) -> bool:
    """Does this argv run Gemini CLI? `node [...flags] <...>/@google/gemini-cli/bundle/gemini.js`
    (the npm bin symlink `…/bin/gemini` resolves to it) or the bin name itself."""
    if not argv:
        return False
    for arg in argv[:4]:
        if arg.startswith("-"):
            continue
        base = os.path.basename(arg)
        if base == SCRIPT and "gemini-cli" in arg:
            return True
        if base == "gemini" and arg is not argv[0]:
            return True
    return False


def under_gemini(chain: list[int]) -> bool:
    """Whether any process of `chain` (our ancestry) runs Gemini CLI."""
    return any(is_gemini(read_cmdline(p)) for p in chain)


def own_address(env: Mapping[str, str]) -> str | None:
    """None when no ancestor of this process runs Gemini CLI; "ask" when the kind must decide."""
    return "ask" if under_gemini(ancestors(os.getpid())) else None


def surely_outside(chain: Sequence[int], environ: Mapping[str, str]) -> bool:
    """The negative ancestry rule (entry-point group `relay_repl.surely_outside`, session/core/outside.py):
    True when no process of `chain` runs Gemini CLI, so none is a session as
    `GeminiProvider.identify_process` judges one (it asks `is_gemini` first); False otherwise, and
    the full judge decides. It never says a process IS inside a session."""
    return not under_gemini(list(chain))
