"""What a Codex send's plan says, over plain values: the codex-queue transport's refusal, notes and
evidence words, and what typing into a Codex pane warns of. Standard library only.

Why apart from queue_ops.py and agent.py (their one home now; both call these): `relay send`'s
plain pre-plan (issue 40) prints the plan before pydantic, the event loop or the agents package is
loaded, so it reads these words from a module loaded by file (system/prefetch.load_by_file), over
a plain listing's row (core/target_row.TargetRow, its `detail` a dict). The models' transport asks
the same functions over a Target and its CodexDetail, so the two plans cannot drift
(tests/agents/codex/test_plan_words.py holds them equal over fixtures and live in the lab).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

THREAD_ID = re.compile(r"[0-9a-fA-F-]{36}")
"""A thread (or queue item) uuid as `codex queue` prints and takes it."""
QUEUE_FILE = "queue_1.sqlite"
QUEUE_RELIES_ON = "the queue schema, rollout records and daemon protocol were"
"""What the codex-queue transport trusts, in words (the version policy's refusal names it)."""


def queue_refusal(spec: str, address: str, queue_note: str | None) -> str | None:
    """Why codex-queue cannot serve this thread (before the version policy), or None.

    Durable: a thread that is not loaded still keeps the row until resumed, so liveness is not
    required, but the thread must exist with a rollout."""
    if not THREAD_ID.fullmatch(address):
        return f"{spec} has no thread uuid"
    return queue_note or None


def queue_notes(state: str, live: bool, plan_mode: bool) -> tuple[str, ...]:
    """The plan's notes for an item queued to this thread (goal thread, Plan mode, not loaded, busy)."""
    notes = []
    if state == "never-idle":
        notes.append("goal-controller thread: the queue item runs at the next turn boundary, ahead of the goal continuation")
    if plan_mode:
        notes.append("target is in Plan mode: Codex 0.169.0 still runs the queued message, but as a planning turn "
                     "(the agent plans and does not change files)")
    if not live:
        notes.append("thread is not loaded: the item waits until it is resumed (`codex resume`)")
    elif state == "busy":
        notes.append("target is busy: the item waits for its next idle transition (one item per turn)")
    return tuple(notes)


def queue_delivered_when(address: str) -> str:
    """The receiver evidence that counts as delivered for a queued item, in words."""
    return (
        f"the rollout of thread {address} shows a turn with trigger `queue` whose user message is our queue "
        f"item's client_id (exactly this payload); the row leaving {QUEUE_FILE} only proves dequeue"
    )


def tmux_busy_note(state: str, plan_mode: bool) -> str | None:
    """What typing into a Codex pane does while it is busy or planning (a plan note), or None."""
    notes = []
    if state in ("busy", "never-idle"):
        notes.append("target is busy: Enter steers the line into the running turn (Codex 0.169.0)")
    if plan_mode:
        notes.append("target is in Plan mode: the agent will plan, not act, on this message")
    return "; ".join(notes) or None


TMUX_DELIVERED_WHEN = ("the rollout gains an item_completed UserMessage whose text is exactly this line, in a new "
                       "`user` turn or steered into the running turn; send-keys exit status proves nothing")
"""What counts as delivered for a line typed into a Codex pane."""


def _detail(row: Any) -> Mapping[str, Any]:
    detail = getattr(row, "detail", None)
    return detail if isinstance(detail, Mapping) else {}


def row_queue_refusal(row: Any) -> str | None:
    """`queue_refusal` over a plain listing's row (TargetRow: `detail` is CodexDetail's JSON dict)."""
    return queue_refusal(row.spec, row.address, _detail(row).get("queue_note"))


def row_queue_notes(row: Any) -> tuple[str, ...]:
    """`queue_notes` over a plain listing's row."""
    return queue_notes(row.state, row.live, bool(_detail(row).get("plan_mode")))
