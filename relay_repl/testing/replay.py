"""Replay doubles for the codex-queue and Claude socket transports (see the package doc).

Each double replays what the lab recorded from the real client, substituting only the
values of this run (ids, text, the sender's kernel credentials): so a fast test meets
exactly the records the evidence readers meet in the lab.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import stat
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from relay_repl.system.proc import proc_start
from relay_repl.system.wire import peer_cred

# -- Codex: the queue CLI, the queue file, the rollout --------------------------------------------

_CODEX_CLI = r'''#!{python}
"""Replay of `codex queue --thread <uuid> --message <text>` (Codex 0.169.0, codex.md 3.1)."""
import json, os, sqlite3, sys, time, uuid
args = sys.argv[1:]
mode = {mode!r}
if mode == "fail":
    print({fail_stderr!r}, file=sys.stderr)
    sys.exit(1)
thread, message = args[args.index("--thread") + 1], args[args.index("--message") + 1]
home = os.environ["CODEX_HOME"]
# where Codex 0.171.0 keeps its databases (measured with `codex doctor`; agents/codex/sqlite_home.py)
try:
    import tomllib
    with open(os.path.join(home, "config.toml"), "rb") as f:
        moved = tomllib.load(f).get("sqlite_home")
except FileNotFoundError:
    moved = None
if isinstance(moved, str) and moved.strip():
    dbs = os.path.join(home, os.path.expanduser(moved))
elif os.environ.get("CODEX_SQLITE_HOME", "").strip():
    dbs = os.path.abspath(os.path.expanduser(os.environ["CODEX_SQLITE_HOME"]))
else:
    dbs = home
item, client_id = str(uuid.uuid4()), str(uuid.uuid4())
con = sqlite3.connect(os.path.join(dbs, "queue_1.sqlite"))
order = con.execute("SELECT COALESCE(MAX(queue_order), 0) + 1 FROM queued_items WHERE thread_id = ?", (thread,)).fetchone()[0]
payload = {{"UserInput": {{"content": [{{"type": "text", "text": message, "text_elements": []}}], "client_id": client_id}}}}
now = int(time.time() * 1000)
con.execute("INSERT INTO queued_items (id, thread_id, payload_json, queue_order, created_at_ms, updated_at_ms) "
            "VALUES (?, ?, ?, ?, ?, ?)", (item, thread, json.dumps(payload), order, now, now))
con.commit()
print(f"Queued message {{item}} for thread {{thread}}.")
'''

UNKNOWN_THREAD = ("Error: failed to queue session message: thread/queue/add failed: failed to read thread: invalid "
                  "thread-store request: no rollout found for thread id {thread} (code -32603)")
"""What Codex 0.169.0 prints for a thread with no rollout (codex.md 3.1, measured)."""


def codex_home_from(recorded_queue: Path, home: Path) -> Path:
    """A CODEX_HOME holding a copy of a recorded (empty) `queue_1.sqlite`."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(recorded_queue, home / "queue_1.sqlite")
    return home


def codex_cli(bin_dir: Path, *, fail: str | None = None) -> Path:
    """An executable `codex` that replays `codex queue` (or fails with `fail` on stderr, exit 1)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "codex"
    path.write_text(_CODEX_CLI.format(python=sys.executable, mode="fail" if fail else "ok", fail_stderr=fail or ""))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def queue_rows(home: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(home / "queue_1.sqlite")
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT * FROM queued_items ORDER BY queue_order")]
    finally:
        con.close()


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def take_queued_item(home: Path, item_id: str, rollout: Path, recorded_rollout: Path, *, trigger: str = "queue") -> str:
    """Codex takes the item: its row leaves the queue and the rollout gains a turn (records
    copied from the first recorded queue turn) whose UserMessage carries the row's client_id
    and text. Returns the new turn id."""
    con = sqlite3.connect(home / "queue_1.sqlite")
    try:
        row = con.execute("SELECT payload_json FROM queued_items WHERE id = ?", (item_id,)).fetchone()
        if row is None:
            raise KeyError(f"no queued item {item_id}")
        con.execute("DELETE FROM queued_items WHERE id = ?", (item_id,))
        con.commit()
    finally:
        con.close()
    ui = json.loads(row[0])["UserInput"]
    text = "".join(c.get("text", "") for c in ui["content"])
    recs = _records(recorded_rollout)
    started = next(r for r in recs if (r.get("payload") or {}).get("type") == "task_started"
                   and (r["payload"].get("turn_attribution") or {}).get("turn_trigger") == "queue")
    old_turn = started["payload"]["turn_id"]
    message = next(r for r in recs if (r.get("payload") or {}).get("type") == "item_completed"
                   and (r["payload"].get("item") or {}).get("type") == "UserMessage" and r["payload"].get("turn_id") == old_turn)
    turn = str(uuid.uuid4())
    new_started = json.loads(json.dumps(started))
    new_started["payload"]["turn_id"] = turn
    new_started["payload"]["turn_attribution"].update(turn_id=turn, root_turn_id=turn, turn_trigger=trigger)
    new_message = json.loads(json.dumps(message))
    new_message["payload"]["turn_id"] = turn
    item = new_message["payload"]["item"]
    item["client_id"] = ui["client_id"]
    item["content"] = [{**item["content"][0], "text": text}]
    with rollout.open("a") as fh:
        for rec in (new_started, new_message):
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
    return turn


# -- Claude: the session's messaging socket and its transcript ------------------------------------


class ClaudeSessionReplay:
    """A Claude session's messaging socket (Claude's NDJSON inbox wire, no reply written),
    appending to `transcript` what Claude 2.1.328 appends for each arriving user frame: a
    copy of the recorded top-level `origin` record, or, with `busy=True`, of the recorded
    `attachment.origin` (queued_command) record, carrying this frame's msg_id and content and
    the sender's kernel credentials (SO_PEERCRED), as Claude's `verifiedPeerPid` does. With
    `held=True`, only the recorded `queue-operation` `enqueue` carrying the frame's content, as a
    busy session writes before a turn takes the message."""

    def __init__(self, socket_path: Path, transcript: Path, recorded_transcript: Path, *, busy: bool = False,
                 record: bool = True, held: bool = False) -> None:
        self.socket_path = socket_path
        self.transcript = transcript
        self.busy = busy
        self.record = record
        self.held = held  # a busy session that has not taken it yet: only its queue-operation enqueue is written
        self.frames: list[dict[str, Any]] = []
        recs = _records(recorded_transcript)
        self._top = next((r for r in recs if r.get("type") == "user" and isinstance(r.get("origin"), dict)
                          and r["origin"].get("kind") == "peer"), None)
        self._attached = next((r for r in recs if isinstance(r.get("attachment"), dict)
                               and isinstance(r["attachment"].get("origin"), dict)), None)
        self._enqueue = next((r for r in recs if r.get("type") == "queue-operation" and r.get("operation") == "enqueue"),
                             None)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(socket_path))
        os.chmod(socket_path, 0o600)
        self._sock.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._sock.close()
        try:
            self.socket_path.unlink()
        except OSError:
            pass

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                pid, _uid, _gid = peer_cred(conn)
                buf = b""
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                for line in buf.splitlines():
                    frame = json.loads(line)
                    self.frames.append(frame)
                    if frame.get("type") == "user" and self.record:
                        self._append(frame, pid)

    def _append(self, frame: dict[str, Any], pid: int) -> None:
        content = frame["message"]["content"]
        if self.held:
            assert self._enqueue is not None, "the recorded transcript holds no queue-operation enqueue"
            rec = json.loads(json.dumps(self._enqueue))
            rec["content"] = content
            with self.transcript.open("a") as fh:
                fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            return
        origin = {"kind": "peer", "from": frame.get("from", "uds:unknown"), "verifiedPeerPid": pid,
                  "verifiedPeerProcStart": proc_start(pid), "msg_id": frame.get("msg_id"), "verifiedLocal": True}
        assert self._top is not None and self._attached is not None, "the recorded transcript lacks an origin record"
        if self.busy:
            rec = json.loads(json.dumps(self._attached))
            rec["attachment"].update(prompt=content, origin=origin)
        else:
            rec = json.loads(json.dumps(self._top))
            rec["message"]["content"] = f"Another Claude session sent a message:\n{content}"
            rec["origin"] = origin
        rec["uuid"] = str(uuid.uuid4())
        with self.transcript.open("a") as fh:
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
