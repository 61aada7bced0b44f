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


def plain_rows(env: Mapping[str, str] | None = None) -> list[tuple[str, list[Any] | None]]:
    """(kind, its rows, or None: list it through the models) for every registered kind, by kind name
    (the models' order)."""
    from relay_repl.system.entry_points import scan_entry_points
    from relay_repl.system.pane_list import PlainRoster
    from relay_repl.system.prefetch import load_by_file

    environ = dict(os.environ if env is None else env)
    kinds = sorted({ep.name for ep in scan_entry_points(KINDS)})
    plain = {ep.name: ep.value for ep in scan_entry_points(GROUP)}
    roster = PlainRoster(environ)
    out: list[tuple[str, list[Any] | None]] = []
    for kind in kinds:
        out.append((kind, _one(kind, plain.get(kind), environ, roster, load_by_file)))
    return out


def _one(kind: str, ref: str | None, env: dict[str, str], roster: Any, load_by_file: Any) -> list[Any] | None:
    if ref is None:
        return None  # a kind with no plain listing: only its models list it
    module, _, attr = ref.partition(":")
    mod = load_by_file(kind, module.strip(), GROUP)
    fn = getattr(mod, attr.strip() or "listing", None) if mod is not None else None
    if fn is None:
        return None
    try:
        return fn(env, roster)
    except Exception:  # noqa: BLE001 - a plain reader's surprise is the models' case: they name it
        return None


def listing(env: Mapping[str, str] | None = None) -> list[Any] | None:
    """Every registered kind's targets as `relay targets` lists them: plain rows where a kind's plain
    listing answered, its providers' Targets (the models) where it did not; None when no kind answered
    (the caller then lists them all the models' way, as before)."""
    environ = dict(os.environ if env is None else env)
    parts = plain_rows(environ)
    if all(rows is None for _, rows in parts):
        return None
    left = [kind for kind, rows in parts if rows is None]
    models: dict[str, list[Any]] = {}
    if left:
        from relay_repl.agents import PaneRoster, kind_for
        from relay_repl.agents.discovery import discover_all
        from relay_repl.system import loopless

        roster = PaneRoster(env=environ)
        for kind in left:  # each alone: its providers' reads never depend on another kind's
            k = kind_for(kind)
            providers = list(k.discovery.providers(environ, roster)) if k is not None else []
            models[kind] = loopless.run(discover_all, providers)
    return [t for kind, rows in parts for t in (rows if rows is not None else models[kind])]


def listing_json(targets: list[Any]) -> str:
    """`relay targets --json` of plain rows and Targets alike (a Target's detail dumped as the models do)."""
    import json

    from relay_repl.core.target_row import TargetRow, target_json

    return json.dumps([target_json(t, t.detail if isinstance(t, TargetRow) else t.detail.model_dump(mode="json"))
                       for t in targets], indent=1)
