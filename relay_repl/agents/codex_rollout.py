"""A Codex rollout, searched for the turn(s) whose user message carries a relay id.

Codex keeps no provenance (codex.md; seed section 8): a queued message reaches the model as
plain user input. What its rollout does record is how the message arrived: the `UserMessage`
item's `client_id` (the queue item's, for a queued message) and the turn's `turn_trigger`
(`queue`, `user`, `goal`) on its `task_started` event. Shapes measured on 0.169.0:

    {"type":"event_msg","payload":{"type":"task_started","turn_id":T,"turn_attribution":{"turn_trigger":"queue",...}}}
    {"type":"event_msg","payload":{"type":"item_completed","turn_id":T,"item":{"type":"UserMessage","client_id":C,
                                   "content":[{"type":"text","text":"[relay/1 ...] ..."}]}}}
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from relay_repl.core.relay_ids import carries_id, id_needle
from relay_repl.store.jsonl import LineScan


class RolloutTurn(BaseModel):
    turn_id: str | None
    turn_trigger: str | None
    client_id: str | None
    content: str
    timestamp: str | None


def turns_carrying(rollout: Path | str, relay_id: str) -> tuple[list[RolloutTurn], int]:
    """(turns whose UserMessage has an envelope with exactly this id, bytes scanned), streamed."""
    found: list[RolloutTurn] = []
    scan = LineScan(rollout, id_needle(relay_id), (b'"UserMessage"',))
    for _, raw in scan:
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        p = rec.get("payload") if isinstance(rec, dict) else None
        if not isinstance(p, dict):
            continue
        item = p.get("item")
        if not (isinstance(item, dict) and p.get("type") == "item_completed" and item.get("type") == "UserMessage"):
            continue
        text = "".join(str(c.get("text", "")) for c in item.get("content") or [] if isinstance(c, dict))
        if carries_id(text, relay_id) is None:
            continue
        found.append(RolloutTurn(turn_id=p.get("turn_id"), turn_trigger=None, client_id=item.get("client_id"),
                                 content=text, timestamp=rec.get("timestamp")))
    scanned = scan.scanned
    if found:
        wanted = {t.turn_id for t in found}
        starts = LineScan(rollout, b'"task_started"')
        for _, raw in starts:
            try:
                p = json.loads(raw).get("payload") or {}
            except (ValueError, AttributeError):
                continue
            if p.get("turn_id") in wanted:
                trigger = (p.get("turn_attribution") or {}).get("turn_trigger")
                for t in found:
                    if t.turn_id == p.get("turn_id"):
                        t.turn_trigger = trigger
        scanned += starts.scanned
    return found, scanned
