"""The values a transport's questions to an agent kind return (`TypedEvidence`, `Processes`).

Why: every fact about an agent has one home, its package (`agents/claude_code/`,
`agents/codex/`) and its adapter file. A transport that needs such a fact (which
screen classifier reads the pane, whether the pane still runs the target process,
what a busy receiver does with Enter, where the receiver's evidence appears and
what in it counts) asks the target's kind, `agent_for(target.kind)`, its `screen`
and `evidence` capabilities (agents/capabilities.py), and never branches on the kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Processes = Callable[[int], list[tuple[int, list[str]]]]
"""(pid, argv) of a process and everything below it: how a roster rule looks under a pane."""


class TypedEvidence(BaseModel):
    """What the receiver's own file says about a line typed into its pane."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    state: Literal["none", "enqueued", "confirmed", "mismatch"] = Field(
        description="none: nothing yet; enqueued: held, no turn took it yet; confirmed: a turn took exactly "
                    "this line; mismatch: the line is there but not as a typed turn (do not trust it)")
    detail: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    records: list[dict[str, Any]] = Field(default_factory=list, description="every record that carries the line")

    @property
    def landed(self) -> bool:
        """A turn took the line (confirmed, or there in a turn of the wrong kind)."""
        return self.state in ("confirmed", "mismatch")
