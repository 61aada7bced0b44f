"""Reading a Codex 0.169.0 rollout: the turn our message started and how it ended (turn replies),
and the turns whose user message carries a relay id (`relay verify`).

Facts (codex.md section 2.3, re-measured in the lab with a queued message):
- a turn opens with `event_msg` `task_started` (`turn_id`, `turn_attribution.turn_trigger`);
- the message that started it is an `event_msg` `item_completed` whose item is a
  `UserMessage` carrying the queue item's `client_id` (outside the model's view);
- the turn ends with `event_msg` `task_complete` whose `last_agent_message` is the
  agent's final message (null when it ended without one), or `turn_aborted`.
A tool call in between (e.g. an MCP `relay_reply`, recorded as an `McpToolCall` item)
does not end the turn; the final message after it does.

Codex keeps no provenance (seed section 8): a queued message reaches the model as plain user
input. What the rollout records is how a message arrived (the UserMessage's `client_id`, the
turn's `turn_trigger`), never who sent it; `turns_carrying` reports exactly that.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from relay_repl.agents.turn_watch import MatchedTail
from relay_repl.store.jsonl import LineScan, parse_object

if TYPE_CHECKING:  # annotations only: turn replies and relay ids load on first use, off the `relay targets` path
    from relay_repl.agents.turn_reply import TurnReply, TurnStatus

KIND = "codex"


RACY = 2.0
"""Seconds after a directory's last change during which its listing is taken again on every ask."""

_listings: dict[str, tuple[dict[str, int], dict[str, list[str]]]] = {}


def _rollout_files(sessions: Path) -> dict[str, list[str]]:
    """directory -> the rollout file names in it, for every directory under `sessions`. Kept while
    no directory under it changed (each one's mtime, taken before it was listed, is as it was; a file
    or directory created, removed or renamed in it moves it) and none changed within RACY seconds (two
    creations in one clock tick leave one mtime). Why: every reply from a daemon hosting several
    threads looks up each thread's rollout (prove_thread), and each lookup walked the whole
    sessions tree (issue 33)."""
    key = str(sessions)
    kept = _listings.get(key)
    now = time.time()
    if kept is not None:
        stamps, files = kept
        try:
            if all(os.stat(d).st_mtime_ns == m and now - m / 1e9 >= RACY for d, m in stamps.items()):
                return files
        except OSError:
            pass
    stamps, files = {}, {}
    todo = [key]
    while todo:
        d = todo.pop()
        try:
            stamps[d] = os.stat(d).st_mtime_ns  # before the listing: a change after it moves the mtime
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        names = []
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                todo.append(e.path)
            elif e.name.startswith("rollout-") and e.name.endswith(".jsonl"):
                names.append(e.name)
        files[d] = names
    _listings[key] = (stamps, files)
    return files


def scan_rollouts(sessions: Path, wanted: set[str]) -> dict[str, Path]:
    """Rollout files of the wanted thread ids, from one walk of `sessions/YYYY/MM/DD`
    (`rollout-<time>-<thread>.jsonl`, codex.md §2): the newest (by its name's time) if several."""
    found: dict[str, Path] = {}
    if not wanted or not sessions.is_dir():
        return found
    for root, names in _rollout_files(sessions).items():
        for f in names:
            tid = f[-len(".jsonl") - 36 : -len(".jsonl")]
            if tid in wanted and (tid not in found or f > found[tid].name):
                found[tid] = Path(root) / f
    return found


def rollout_path(codex_home: Path, thread_id: str, hint: str | os.PathLike[str] | None = None) -> Path | None:
    """The rollout of `thread_id`: `hint` (the path discovery read from the state database) when it
    exists, else the newest `sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`; None before the
    thread's first turn writes it. The one lookup every reader uses."""
    if hint and os.path.isfile(hint):
        return Path(hint)
    return scan_rollouts(codex_home / "sessions", {thread_id}).get(thread_id)


class CodexTurnWatch(MatchedTail):
    """Watches one rollout for the turn whose user message is ours.

    Matched by the queue item's `client_id` when we have it (the strongest receipt),
    else by the exact payload text (our payload carries a unique relay id).
    """

    def __init__(self, rollout: Path | str, *, client_id: str | None = None, text: str | None = None) -> None:
        super().__init__(rollout, "Codex", ("client_id", client_id), text, "the exact payload text")
        self.client_id = client_id
        self.turn_id: str | None = None
        self.trigger: str | None = None
        self._triggers: dict[str, str] = {}

    def poll(self) -> TurnReply | None:
        for rec in self._tail:
            p = rec.get("payload")
            if not isinstance(p, dict):
                continue
            kind = p.get("type")
            if kind == "task_started":
                attribution = p.get("turn_attribution") or {}
                self._triggers[str(p.get("turn_id"))] = str(attribution.get("turn_trigger") or "?")
            elif self.turn_id is None and kind == "item_completed":
                item = p.get("item") or {}
                if item.get("type") == "UserMessage" and self._ours(item):
                    self.turn_id = str(p.get("turn_id"))
                    self.trigger = self._triggers.get(self.turn_id)
            elif self.turn_id is not None and p.get("turn_id") == self.turn_id:
                if kind == "task_complete":
                    final = p.get("last_agent_message")
                    text = final if isinstance(final, str) and final.strip() else None
                    return self._reply("answered" if text else "no final message", text,
                                       f"task_complete of turn {self.turn_id} (last_agent_message)", rec)
                if kind == "turn_aborted":
                    return self._reply("aborted", None,
                                       f"turn_aborted ({p.get('reason') or '?'}) of turn {self.turn_id}", rec)
        return None

    def _ours(self, item: dict) -> bool:
        if self.client_id:
            return item.get("client_id") == self.client_id
        body = "".join(c.get("text", "") for c in item.get("content", []) if isinstance(c, dict))
        return body == self.text

    def _reply(self, status: TurnStatus, text: str | None, record: str, rec: dict) -> TurnReply:
        from relay_repl.agents.turn_reply import TurnReply

        return TurnReply(kind=KIND, status=status, text=text, turn_id=self.turn_id, source=str(self.source),
                         record=record + (f", trigger {self.trigger}" if self.trigger else ""),
                         at=rec.get("timestamp"), anchor=self.anchor)


# ---- turns carrying a relay id (relay verify) ----------------------------------------


class RolloutTurn(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built on first use, off the targets path

    turn_id: str | None
    turn_trigger: str | None
    client_id: str | None
    content: str
    timestamp: str | None


def turns_carrying(rollout: Path | str, relay_id: str) -> tuple[list[RolloutTurn], int]:
    """(turns whose UserMessage has an envelope with exactly this id, bytes scanned), streamed."""
    from relay_repl.core.relay_ids import carries_id, id_needle

    found: list[RolloutTurn] = []
    needle, follow = id_needle(relay_id)
    scan = LineScan(rollout, needle, (b'"UserMessage"',), followed_by=follow)
    for _, raw in scan:
        rec = parse_object(raw)
        p = rec.get("payload") if rec is not None else None
        if rec is None or not isinstance(p, dict):
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
            rec = parse_object(raw)
            if rec is None:
                continue
            p = rec.get("payload") or {}
            if p.get("turn_id") in wanted:
                trigger = (p.get("turn_attribution") or {}).get("turn_trigger")
                for t in found:
                    if t.turn_id == p.get("turn_id"):
                        t.turn_trigger = trigger
        scanned += starts.scanned
    return found, scanned
