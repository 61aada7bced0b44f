"""`transports/ranking.choose` for a plain send, over plain rows and an adapter's declared flags.

For `relay send`'s plain pre-plan (issue 40, frontends/send_plain.py): a kind's `plain_plan` hook
gets `send.choose(row, refusals)` built here and learns the transport, fallback and choice notes the
models would put in the plan, without pydantic. Exactly what `choose(target, transports,
Requirements(), None)` gives, or None (nothing usable, a flag not read, an unverified client): the
caller then hands the command to the models, whose refusal is the one it always was.

What it reads:
- each transport's flags from the kind's adapter `[[transports]]` entries (agents/plain_facts.py;
  a test holds them equal to every built transport's `Capabilities`, tmux's class attribute included);
- the order ties keep: the `relay_repl.transports` entry points by name, as `build_transports` makes
  the session's transports;
- the rules and words from core/transport_rank.py, which `ranking.choose` calls too.

The base `Transport.refusal` (not live, a pane needed and none) is applied here; the kind gives the
rest (`refusals`: its transport-specific answer per offered transport, None when usable).
Loaded by file (standard library only, like the plain listings); never imports a transport.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relay_repl.core import transport_rank

TRANSPORTS = "relay_repl.transports"


def transport_order() -> list[str]:
    """The registered transports' names as the session builds them (by name)."""
    from relay_repl.system.entry_points import scan_entry_points

    return sorted({ep.name for ep in scan_entry_points(TRANSPORTS)})


def declared_flags(adapter: Mapping[str, Any] | None) -> dict[str, dict[str, bool]] | None:
    """{transport name: its capability flags} from an adapter's toml dict, or None if not plainly read."""
    if adapter is None:
        return None
    out: dict[str, dict[str, bool]] = {}
    for spec in adapter.get("transports", ()):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            return None
        flags = {k: spec.get(k, False) for k in transport_rank.FLAGS}
        if not all(type(v) is bool for v in flags.values()):
            return None
        out[spec["name"]] = flags
    return out


def choose(row: Any, refusals: Mapping[str, str | None], flags: Mapping[str, Mapping[str, bool]],
           order: Sequence[str]) -> tuple[str, str, tuple[str, ...]] | None:
    """(transport, fallback, notes) as `ranking.choose` gives them for a plain send, or None."""
    if not row.live or row.client_status == "unverified":
        return None  # the models refuse (or let through) with the version policy's own words
    offered = [n for n in order if n in row.transports]
    if any(n not in flags or n not in refusals for n in offered):
        return None
    usable = [n for n in offered
              if refusals[n] is None and not (flags[n].get("needs_pane") and not row.pane)]
    notes: list[str] = []
    durable = False
    if row.state == "never-idle":
        notes.append(transport_rank.never_idle_note(row.spec))
        durable = True
    if durable:
        usable = [n for n in usable if flags[n].get("durable")]
    ranked = sorted(usable, key=lambda n: transport_rank.strength(flags[n]), reverse=True)
    if not ranked:
        return None  # the models refuse with every transport's reason
    return ranked[0], transport_rank.plain_fallback(ranked), tuple(notes)


def chooser(kind: str, adapter: Mapping[str, Any] | None
            ) -> Callable[[Any, Mapping[str, str | None]], tuple[str, str, tuple[str, ...]] | None]:
    """`send.choose` for targets of `kind` (its adapter dict as agents/plain_facts.adapter reads it)."""
    flags = declared_flags(adapter)
    order = transport_order()

    def choose_for(row: Any, refusals: Mapping[str, str | None]) -> tuple[str, str, tuple[str, ...]] | None:
        if flags is None or row.kind != kind:
            return None
        return choose(row, refusals, flags, order)

    return choose_for
