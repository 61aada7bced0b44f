"""The plan's text and digest over plain fields: what the gate shows, without pydantic.

Why a second form beside `core.plan.Plan`: a send's plan is waited for from the command's start
(issue 40: <= 200 ms), and pydantic and the event loop are most of what runs before it today. A
pre-plan path with neither must print exactly the bytes `Plan.render` prints and carry exactly the
digest `approval.plan_digest` gives, so that the models, loaded after the plan is on screen, can
prove the plan they would act on is the one shown (same digest) before a y is acted on. One home
for both: `Plan.render` calls `render_plan` here, so the two cannot drift. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Mapping
from typing import Any

from relay_repl.core.controls import visible

PLAN_FIELDS = ("action", "target", "identified_by", "transport", "fallback", "payload", "delivered_when", "notes",
               "files", "relay_id", "reply_route", "heading")
"""Plan's fields, in its order (a test holds the two equal)."""

_DEFAULTS: dict[str, Any] = {"fallback": "none", "notes": (), "files": (), "relay_id": None, "reply_route": None,
                             "heading": None}


def plan_fields(**given: Any) -> dict[str, Any]:
    """Every field of a plan as `Plan.model_dump(mode="json")` gives it (tuples as lists, defaults
    filled in); a name Plan does not have is refused, as `extra="forbid"` refuses it."""
    unknown = set(given) - set(PLAN_FIELDS)
    if unknown:
        raise TypeError(f"a plan has no field(s) {sorted(unknown)}")
    missing = [n for n in PLAN_FIELDS if n not in given and n not in _DEFAULTS]
    if missing:
        raise TypeError(f"a plan needs {missing}")
    out = {n: given[n] if n in given else _DEFAULTS[n] for n in PLAN_FIELDS}
    out["notes"], out["files"] = list(out["notes"]), list(out["files"])
    return out


def fields_digest(fields: Mapping[str, Any]) -> str:
    """sha256 of the plan as shown: `approval.plan_digest` of the Plan with these fields."""
    return hashlib.sha256(json.dumps(dict(fields), sort_keys=True).encode()).hexdigest()


def render_plan(p: Mapping[str, Any], width: int = 100) -> str:
    """Plain text, one labelled block per part; the payload is shown verbatim.

    Every part passes `visible`: a target named by its agent, or a plan built by a relay on
    another host, could carry an escape sequence that draws a forged line on the gate's screen.
    """

    def block(label: str, text: str) -> str:
        # every part can hold text a peer chose (a session's name, a host's plan notes): shown, never applied
        wrapped = textwrap.wrap(visible(text), width=width - 16) or [""]
        first, *rest = wrapped
        return "\n".join([f"  {label:<13} {first}"] + [f"  {'':<13} {r}" for r in rest])

    relay_id, heading = p.get("relay_id"), p.get("heading")
    head = f"Plan: {p['action']}" + (f"  (relay id {relay_id})" if relay_id else "")
    lines = [
        *([visible(heading)] if heading else []),
        visible(head),
        block("1 target", f"{p['target']} — identified by {p['identified_by']}"),
        block("2 transport", f"{p['transport']}; fallback: {p.get('fallback', 'none')}"),
        # The payload is never wrapped or trimmed: the operator approves the exact bytes, so an
        # invisible direction control (a forwarded peer's U+202E) is named, never applied to the screen.
        f"  {'3 payload':<13} {visible(p['payload'], keep_newlines=True)}",
        block("4 delivered", p["delivered_when"]),
    ]
    if p.get("reply_route"):
        lines.append(block("  reply via", p["reply_route"]))
    lines += [block("  files", f) for f in p.get("files", ())]
    lines += [block("! note", n) for n in p.get("notes", ())]
    return "\n".join(lines)
