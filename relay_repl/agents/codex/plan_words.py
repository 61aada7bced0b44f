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


# -- the reply route: what the thread's config.toml allows (replies.codex_options / codex_route call these) --

SANDBOXED = ("workspace-write", "read-only")
"""Sandbox modes that refuse the AF_UNIX connect `relay reply` makes (EPERM, measured)."""

CONFIG_FIX = "fix it: Codex reads its sandbox and MCP servers there"
"""The next step a config.toml that is not readable TOML is named with (it then counts as {})."""

MCP_FIRST = True
"""A Codex offered the relay MCP server answers with its relay_reply tool even where its shell could
run `relay reply` (the lab's Codex agents, unsandboxed, do: converse.py picks the tool when listed),
so where both are open the plan names relay_reply first and `relay reply` as the alternative."""


def home_dir(detail_home: str | None, env: Mapping[str, str]) -> str:
    """The thread's CODEX_HOME: what discovery recorded, else `$CODEX_HOME`, else ~/.codex."""
    import os

    return str(detail_home or env.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex"))


def reply_options(cfg: Mapping[str, Any], path: str, rollout: str | None, address: str) -> dict[str, Any]:
    """`ReplyOptions`' fields from `$CODEX_HOME/config.toml` (parsed: `cfg`, {} when missing or unreadable)."""
    from relay_repl.core.mcp_names import MCP_TOOL
    from relay_repl.core.reply_words import relay_server

    sandbox = str(cfg.get("sandbox_mode") or "workspace-write")  # Codex's default when unset
    unsandboxed = sandbox not in SANDBOXED
    why = (f"sandbox_mode {sandbox} in {path} lets its commands reach the inbox socket" if unsandboxed else
           f"sandbox_mode {sandbox} in {path}: the sandbox refuses the unix socket `relay reply` writes to")
    found = relay_server(cfg.get("mcp_servers"))
    mcp = note = None
    if found:
        name, entry = found
        mcp = f"[mcp_servers.{name}] in {path}"
        tools: dict[str, Any] = entry["tools"] if isinstance(entry.get("tools"), dict) else {}
        tool_mode = (tools.get(MCP_TOOL) or {}).get("approval_mode") if isinstance(tools.get(MCP_TOOL), dict) else None
        mode = tool_mode or entry.get("default_tools_approval_mode")
        if cfg.get("approval_policy") == "never" and mode != "approve":
            note = ('approval_policy is "never" and relay_reply is not pre-approved (default_tools_approval_mode = '
                    '"approve"), so Codex refuses the call')
        elif mode != "approve":
            note = "Codex may ask the operator to approve the relay_reply call in the agent's pane"
    return {"relay_reply": unsandboxed, "relay_reply_why": why, "mcp": mcp, "mcp_note": note,
            "turn": rollout if rollout else f"thread {address}'s rollout (written at its first turn)",
            "turn_why": "the task_complete of the turn whose user message has our queue item's client_id"}


def mcp_refused(opts: Mapping[str, Any]) -> bool:
    """Whether the relay_reply call is certain to be refused (its approval settings say so)."""
    return bool(opts.get("mcp_note") and "refuses" in opts["mcp_note"])


def reply_verified_by(address: str, pid: int | None) -> str:
    """When a `relay reply` from this thread counts (its route's words)."""
    return (f"the connecting `relay reply` was started by the Codex host holding thread {address} "
            f"(pid {pid}) and its CODEX_THREAD_ID is that thread")
