"""What the REPL says when the operator reaches for an attribute on the wrong object.

An operator typed `session.wait_reply(d, 20)` and got a bare AttributeError; what they wanted is
on the delivery (`await d.wait_reply(20)`). Only mistakes whose right call is certain are listed:
a name that is the delivery's (or the session's under another name), never a guess at a typo.
"""

from __future__ import annotations

from relay_repl.core.errors import MisnamedAttribute

_SEND = "d is what `d = await session.send(...)` returned"

SESSION: dict[str, str] = {
    "wait_reply": f"wait_reply is on the delivery, not the session: `await d.wait_reply(20)` ({_SEND})",
    "wait_for_reply": f"waiting for an answer is on the delivery: `await d.wait_reply(20)` ({_SEND})",
    "replies": f"a delivery's answers are on the delivery: `d.reply` (the verified one), `d.replies` (all); "
               f"every message that came in is `session.inbox` ({_SEND})",
    "summary": f"summary is on the delivery, not the session: `d.summary()` ({_SEND})",
    "outcome": f"outcome is on the delivery, not the session: `d.outcome` ({_SEND})",
    "discover": "discovery is `await session.refresh()` (it returns the targets; `session.targets` shows the last list)",
}


def missing(owner: str, name: str, hints: dict[str, str]) -> AttributeError:
    """The error for `owner.name` that does not exist: the hint when the right call is known, else
    Python's own words."""
    if name in hints:
        return MisnamedAttribute(hints[name])
    return AttributeError(f"{owner!r} object has no attribute {name!r}")
