"""The inbox frames an agent's request travels in, and the hop it claims (plain values and a pure rule).

Why apart from core/request.py: `relay ask` from an agent's shell is one process start, and the
`Request` model there is pydantic's; the asking side needs only these names and this rule (issue 33)."""

from __future__ import annotations

FRAME_TYPE = "relay-request"
"""The inbox frame that carries a request (beside Claude's `user` and `control` frames)."""
ANSWER_TYPE = "relay-request-answer"
"""The one line the operator's inbox writes back on the same connection: held, or refused and why."""


def request_hop(claimed: int, last_to_asker: int | None) -> int:
    """The hop a request carries: the hop its asker's exchange is at (the last relay message the
    operator delivered to it, + 1; 0 when it never got one), never below what the asker claimed.
    May exceed the cap: the caller refuses it then."""
    carried = 0 if last_to_asker is None else last_to_asker + 1
    return max(claimed, carried)
