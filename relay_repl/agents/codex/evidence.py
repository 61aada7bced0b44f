"""Codex's receiver evidence: the durable queue's rows and the thread's rollout.

Facts (codex.md sections 2 and 3, verified on 0.169.0):
- `$CODEX_HOME/queue_1.sqlite` holds queued items; the schema has drifted across
  versions (ANCHORS C.5), so it is opened read-only and introspected; a `state`
  column, where it exists, distinguishes pending from claimed/failed.
- The rollout `sessions/YYYY/MM/DD/rollout-<ts>-<thread>.jsonl` records each turn's
  `task_started` (with `turn_attribution.turn_trigger`: user, queue, ...) and each
  `item_completed` UserMessage (with the queue row's `client_id`).
- Enter while a turn runs steers the line into that turn (0.169.0).
All readers are blocking and tolerant (a file mid-write or gone reads as no evidence).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from relay_repl.store.sqlite_read import connect_read_only

import relay_repl.store.jsonl as jsonl
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.core.target import Target


def codex_home(target: Target) -> Path:
    from relay_repl.agents.codex.plan_words import home_dir

    return Path(home_dir(CodexDetail.of(target).codex_home, os.environ))


def databases(target: Target) -> Path:
    """The directory of the target's Codex databases (queue_1.sqlite among them): what discovery
    found (CodexDetail.sqlite_home), else resolved now (agents/codex/sqlite_home.py)."""
    found = CodexDetail.of(target).sqlite_home
    if found:
        return Path(found)
    from relay_repl.agents.codex.sqlite_home import sqlite_home

    return sqlite_home(codex_home(target), os.environ).path


def read_item(home: Path, item_id: str) -> dict[str, Any] | None:
    """The queue row with this id (read-only), or None if it is gone. `home`: the directory of
    the databases (`databases(target)`: CODEX_HOME unless sqlite_home moved them)."""
    db = home / "queue_1.sqlite"
    if not db.exists():
        return None
    con = connect_read_only(db)
    try:
        return _item_row(con, _queue_columns(con), item_id)
    finally:
        con.close()


def _queue_columns(con: Any) -> list[str]:
    return [r[1] for r in con.execute("PRAGMA table_info(queued_items)").fetchall()]


def _item_row(con: Any, cols: list[str], item_id: str) -> dict[str, Any] | None:
    """Our row through `con` (`cols`: the table's columns, the schema having drifted across versions).
    Every statement read to its end: a kept connection then holds no read transaction between polls
    (which would keep the daemon's WAL from being checkpointed)."""
    id_col = "id" if "id" in cols else "queued_item_id"
    payload_col = "payload_json" if "payload_json" in cols else "payload_jsonb"
    want = [c for c in (id_col, "thread_id", "queue_order", payload_col, "state", "failure_jsonb") if c in cols]
    rows = con.execute(f"SELECT {', '.join(want)} FROM queued_items WHERE {id_col} = ?", (item_id,)).fetchall()
    if not rows:
        return None
    rec = dict(zip(want, rows[0]))
    ahead = con.execute(
        "SELECT COUNT(*) FROM queued_items WHERE thread_id = ? AND queue_order < ?",
        (rec["thread_id"], rec["queue_order"]),
    ).fetchall()[0][0]
    try:
        payload = json.loads(rec.get(payload_col) or "{}")
    except (TypeError, ValueError):
        payload = {}
    ui = payload.get("UserInput") or {}
    return {
        "thread_id": rec["thread_id"],
        "queue_order": rec["queue_order"],
        "ahead": ahead,
        "client_id": ui.get("client_id"),
        "state": rec.get("state", "pending"),
        "failure": rec.get("failure_jsonb"),
    }


class QueueReader:
    """`read_item` for one confirm's polls, on one read-only connection (issue 33: opening the
    database and reading its schema on every poll was most of a poll's cost).

    Kept only while a writer has the database open in WAL mode (its -wal beside it): each read is
    then a fresh read transaction that sees every commit. The file is stat'ed on each read, and a
    different file at the path (replaced) or no -wal (its writer closed it: an `immutable` open is
    right then, and a kept one could miss a later writer) opens anew, as `read_item` does. Blocking;
    one thread at a time (the confirm loop polls in turn); `close` when the confirm ends."""

    def __init__(self, home: Path) -> None:
        self.db = home / "queue_1.sqlite"
        self._con: Any = None
        self._key: tuple[int, int] | None = None
        self._cols: list[str] = []

    def read(self, item_id: str) -> dict[str, Any] | None:
        try:
            st = os.stat(self.db)
        except OSError:
            self.close()
            return None
        key = (st.st_dev, st.st_ino)
        if not os.path.lexists(f"{self.db}-wal"):
            self.close()
            return read_item(self.db.parent, item_id)
        if self._con is None or self._key != key:
            self.close()
            self._con = connect_read_only(self.db, check_same_thread=False)
            self._key, self._cols = key, _queue_columns(self._con)
        return _item_row(self._con, self._cols, item_id)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def find_in_rollout(rollout: Path, *, client_id: str | None, text: str) -> dict[str, Any] | None:
    """The turn that carried our message, matched on client_id, else exact text."""
    return RolloutScan(rollout).find(client_id=client_id, text=text)


class RolloutScan:
    """`find_in_rollout`, kept open across polls: each `find` parses only the lines appended
    since the last one (the turns' triggers and the UserMessage items seen so far are kept).

    Why: a confirm loop polls every few tens of ms while Codex takes the item, and a
    rollout grows to megabytes over a long thread; re-reading it whole on every poll
    made short poll intervals cost more than the wait they shortened. A last line still
    being written is left for the next `find` (jsonl.complete_lines).
    """

    def __init__(self, rollout: Path) -> None:
        self.path = rollout
        self._offset = 0
        self._triggers: dict[str, str] = {}
        self._items: list[dict[str, Any]] = []  # UserMessage items in file order

    def find(self, *, client_id: str | None, text: str) -> dict[str, Any] | None:
        """The first UserMessage item matching `client_id` (else exact `text`), with its turn."""
        for at, raw in jsonl.complete_lines(self.path, self._offset):
            self._offset = at + len(raw)
            if b'"task_started"' not in raw and b'"UserMessage"' not in raw:
                continue  # neither record this reads (the type names appear verbatim): no JSON parse (issue 33)
            rec = jsonl.parse_object(raw)
            if rec is None:
                continue
            p = rec.get("payload") or {}
            if p.get("type") == "task_started":
                attribution = p.get("turn_attribution") or {}
                self._triggers[p.get("turn_id", "")] = attribution.get("turn_trigger", "?")
            item = p.get("item") or {}
            if p.get("type") == "item_completed" and item.get("type") == "UserMessage":
                body = "".join(c.get("text", "") for c in item.get("content", []) if isinstance(c, dict))
                self._items.append({"turn_id": p.get("turn_id", ""), "client_id": item.get("client_id"),
                                    "text": body, "at": rec.get("timestamp")})
        for it in self._items:
            if (it["client_id"] == client_id) if client_id else (it["text"] == text):
                return {"turn_id": it["turn_id"], "turn_trigger": self._triggers.get(it["turn_id"]),
                        "client_id": it["client_id"], "text": it["text"], "at": it["at"]}
        return None


def codex_typed_items(rollout: Path, offset: int, payload: str) -> list[dict[str, Any]]:
    """UserMessage items after byte `offset` whose text is exactly `payload`, with their turn.

    `steered` is True when the turn had started before `offset` (the message went into
    a turn that was already running: Enter-while-busy steers in 0.169.0).
    """
    hits: list[dict[str, Any]] = []
    turns: dict[str, tuple[str | None, int]] = {}
    for at, rec in jsonl.records(rollout):
        p = rec.get("payload")
        if not isinstance(p, dict):
            continue
        if p.get("type") == "task_started":
            attribution = p.get("turn_attribution") or {}
            turns[str(p.get("turn_id"))] = (attribution.get("turn_trigger"), at)
        item = p.get("item") if isinstance(p.get("item"), dict) else None
        if at >= offset and p.get("type") == "item_completed" and item and item.get("type") == "UserMessage":
            text = "".join(c.get("text", "") for c in item.get("content", []) if isinstance(c, dict))
            if text.strip() == payload.strip():  # edge whitespace may be trimmed on submit
                turn = str(p.get("turn_id"))
                trigger, started = turns.get(turn, (None, -1))
                hits.append({"turn_id": turn, "turn_trigger": trigger, "steered": 0 <= started < offset,
                             "client_id": item.get("client_id"), "offset": at, "at": rec.get("timestamp")})
    return hits


def turns_since(rollout: Path, since: float) -> list[dict[str, Any]]:
    """The rollout's turns started at or after epoch `since`: id, trigger, and the user text."""
    from datetime import datetime

    turns: dict[str, dict[str, Any]] = {}
    for _, rec in jsonl.records(rollout):
        p = rec.get("payload") or {}
        try:
            at = datetime.fromisoformat(str(rec.get("timestamp")).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        if p.get("type") == "task_started" and at >= since - 1:
            attribution = p.get("turn_attribution") or {}
            turns[str(p.get("turn_id"))] = {"turn_id": p.get("turn_id"), "trigger": attribution.get("turn_trigger"),
                                             "at": rec.get("timestamp"), "user": None}
        item = p.get("item") or {}
        turn = turns.get(str(p.get("turn_id")))
        if turn is not None and p.get("type") == "item_completed" and item.get("type") == "UserMessage":
            turn["user"] = "".join(c.get("text", "") for c in item.get("content", []) if isinstance(c, dict))[:300]
    return list(turns.values())


CALL_TAIL = 4 * 1024 * 1024
"""How far back a rollout is searched for a relay tool call: the call is the thread's latest
activity when its answer arrives, so the tail holds it; a long history is never parsed."""


def _words(text: str) -> str:
    return " ".join(text.split())


def _shell_words(cmd: str) -> list[str]:
    import shlex

    try:
        return shlex.split(cmd)
    except ValueError:  # unbalanced quotes: the plain words still show what was run
        return cmd.split()


def _call_args(payload: dict[str, Any]) -> dict[str, Any]:
    raw = payload.get("arguments")
    if isinstance(raw, dict):
        return raw
    try:
        args = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def holds_reply_call(payload: dict[str, Any], relay_id: str, text: str | None) -> bool:
    """Whether one rollout `function_call` payload is this thread answering `relay_id` with
    `text`: the relay MCP tool `relay_reply(relay_id, text)`, or a shell command
    (`exec_command`'s `cmd`) running `relay reply <relay_id> <text>`."""
    if payload.get("type") != "function_call":
        return False
    args = _call_args(payload)
    if payload.get("name") == "relay_reply":
        return (str(args.get("relay_id", "")).strip() == relay_id
                and (text is None or _words(str(args.get("text", ""))) == _words(text)))
    cmd = args.get("cmd") or args.get("command")
    if isinstance(cmd, list):
        cmd = " ".join(str(c) for c in cmd)
    if not isinstance(cmd, str) or "reply" not in cmd:
        return False
    words = _shell_words(cmd)
    runs = any(w.rsplit("/", 1)[-1] == "relay" and words[i + 1: i + 3][:1] == ["reply"] and
               words[i + 2: i + 3] == [relay_id] for i, w in enumerate(words))
    return runs and (text is None or _words(text) in " ".join(words))


def reply_calls(rollout: Path | str, relay_id: str, text: str | None) -> int:
    """How many tool calls in the rollout's tail answer `relay_id` with `text` (see holds_reply_call)."""
    return sum(1 for rec in jsonl.latest_first(rollout, tail=CALL_TAIL, containing=relay_id.encode())
               if rec.get("type") == "response_item" and holds_reply_call(rec.get("payload") or {}, relay_id, text))


def pending_calls(rollout: Path | str, tool: str) -> list[str]:
    """Call ids of `tool` calls in the rollout's tail that have no output yet: a call in flight,
    which is what the tool's own server sees while it runs."""
    return pending_calls_where(rollout, lambda p: p.get("type") == "function_call" and p.get("name") == tool)


def _relay_ask_words(payload: dict[str, Any]) -> list[str] | None:
    """The words after `relay ask` of a shell command in one rollout `function_call`, or None."""
    cmd = _call_args(payload).get("cmd") or _call_args(payload).get("command")
    if isinstance(cmd, list):
        cmd = " ".join(str(c) for c in cmd)
    if not isinstance(cmd, str) or "ask" not in cmd:
        return None
    words = _shell_words(cmd)
    for i, w in enumerate(words):
        if w.rsplit("/", 1)[-1] == "relay" and words[i + 1: i + 2] == ["ask"]:
            return words[i + 2:]
    return None


def holds_send_call(payload: dict[str, Any], text: str) -> bool:
    """Whether one rollout `function_call` payload is this thread asking relay to send `text`:
    the relay MCP tool `relay_send(to, body, want)`, or a shell command running `relay ask TARGET <text>`."""
    if payload.get("type") != "function_call":
        return False
    if payload.get("name") == "relay_send":
        return _words(str(_call_args(payload).get("body", ""))) == _words(text)
    words = _relay_ask_words(payload)
    return words is not None and "--status" not in words and _words(text) in " ".join(words)


def holds_status_call(payload: dict[str, Any], request_id: str) -> bool:
    """Whether one rollout `function_call` payload is this thread reading request `request_id`:
    `relay_request_status(request)`, or `relay ask --status <request_id>` in a shell."""
    if payload.get("type") != "function_call":
        return False
    if payload.get("name") == "relay_request_status":
        return str(_call_args(payload).get("request", "")).strip() == request_id
    words = _relay_ask_words(payload) or []
    return any(w == "--status" and words[i + 1: i + 2] == [request_id] for i, w in enumerate(words)) or (
        f"--status={request_id}" in words)


def pending_calls_where(rollout: Path | str, holds: Callable[[dict[str, Any]], bool]) -> list[str]:
    """Call ids of the rollout's calls that `holds` accepts and that have no output yet: the call in
    flight, which is what the tool's server, the operator's inbox or the status tool sees while the
    calling tool waits. The one scan behind pending_calls, pending_send_calls, pending_status_calls."""
    calls: list[str] = []
    done: set[str] = set()
    for rec in jsonl.latest_first(rollout, tail=CALL_TAIL, containing=b"function_call"):
        p = rec.get("payload") or {}
        if p.get("type") == "function_call_output":
            done.add(str(p.get("call_id")))
        elif holds(p):
            calls.append(str(p.get("call_id")))
    return [c for c in calls if c not in done]


def pending_send_calls(rollout: Path | str, text: str) -> list[str]:
    """The calls in flight asking relay to send `text` (see holds_send_call)."""
    return pending_calls_where(rollout, lambda p: holds_send_call(p, text))


def pending_status_calls(rollout: Path | str, request_id: str) -> list[str]:
    """The calls in flight reading request `request_id` (see holds_status_call)."""
    return pending_calls_where(rollout, lambda p: holds_status_call(p, request_id))
