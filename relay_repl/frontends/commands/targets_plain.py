"""`relay targets` without the models: each kind's plain listing, or None to list through them.

Why: the listing is a cold start measured against a peer that lists in ~0.1 s (issue 40), and the
models' path imports pydantic (~0.08 s) and every agent module before it reads a file. Each kind
may declare, in the entry-point group `relay_repl.plain_listing`, a standard-library module
(`agents/<kind>/plain_listing.py`) with `listing(env, roster) -> list[TargetRow] | None`: the rows
its provider would list, or None where it does not accept what it read exactly. Loaded by file
(system/prefetch.load_by_file), never by name: the agents package imports pydantic. The plain
path is taken only when every registered kind has one and each answers; the command asks the
kinds, it never names one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

GROUP = "relay_repl.plain_listing"
KINDS = "relay_repl.agents"


def plain_rows(env: Mapping[str, str] | None = None) -> list[Any] | None:
    """Every registered kind's rows in the models' order (by kind name), or None (list through the models)."""
    from relay_repl.system.entry_points import scan_entry_points
    from relay_repl.system.pane_list import PlainRoster
    from relay_repl.system.prefetch import load_by_file

    environ = dict(os.environ if env is None else env)
    kinds = sorted({ep.name for ep in scan_entry_points(KINDS)})
    plain = {ep.name: ep.value for ep in scan_entry_points(GROUP)}
    if not kinds or any(k not in plain for k in kinds):
        return None  # a kind with no plain listing: only the models list it
    roster = PlainRoster(environ)
    rows: list[Any] = []
    for kind in kinds:
        module, _, attr = plain[kind].partition(":")
        mod = load_by_file(kind, module.strip(), GROUP)
        fn = getattr(mod, attr.strip() or "listing", None) if mod is not None else None
        if fn is None:
            return None
        try:
            got = fn(environ, roster)
        except Exception:  # noqa: BLE001 - a plain reader's surprise is the models' case: they name it
            if os.environ.get("RELAY_PLAIN_DEBUG"):
                raise
            return None
        if got is None:
            return None
        rows.extend(got)
    return rows
