"""The `Agent` protocol: what transports, the lab and the session ask an agent kind.

Why: every fact about an agent has one home, its package (`agents/claude_code/`,
`agents/codex/`) and its adapter file. A transport that needs such a fact (which
screen classifier reads the pane, whether the pane still runs the target process,
what a busy receiver does with Enter, where the receiver's evidence appears and
what in it counts) asks the target's agent, `agent_for(target.kind)`, and never
branches on the kind itself. A new agent kind adds a package implementing this
protocol and registers it in `relay_repl.agents`; no transport changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.target import Target

if TYPE_CHECKING:  # annotations only: screens/model.py loads with the first screen read, off `relay targets`
    from relay_repl.agents.screens.model import Snapshot

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


class Agent(Protocol):
    """One agent kind, as the layers above see it."""

    kind: str
    evidence_name: str
    """What the receiver's evidence file is called in messages ("transcript", "rollout")."""
    busy_submit: str
    """What one Enter does to a busy receiver, in words."""
    tab_queues_when_busy: bool
    """Whether one Tab may queue a line that Enter left beside `tab to queue message`."""
    tmux_lead: int
    """How many leading characters of a typed payload go alone, one at a time and each seen drawn, before the rest."""

    def screen(self) -> ModuleType | None:
        """The screen classifier module for this kind's TUI, or None (then never type)."""
        ...

    def tmux_busy_note(self, target: Target) -> str | None:
        """A plan note on what typing does to this target in its current state, or None."""
        ...

    def tmux_delivered_when(self) -> str:
        """The receiver evidence that counts as delivered for a typed line, in words."""
        ...

    def roster_mismatch(self, target: Target, snap: Snapshot, processes: Processes, screen: ModuleType) -> str | None:
        """Why the pane in `snap` no longer runs `target`'s process, or None (blocking)."""
        ...

    def waiting_refusal(self, target: Target) -> str | None:
        """Why the agent's own state forbids typing now (a dialog waiting), or None (blocking)."""
        ...

    def evidence_file(self, target: Target) -> Path | None:
        """The file where the receiver records what it took, re-derived each time (blocking)."""
        ...

    def typed_evidence(self, path: Path, offset: int, payload: str) -> TypedEvidence:
        """What `path` (from byte `offset`) says about the typed `payload` (blocking)."""
        ...
