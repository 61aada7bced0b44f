"""Gemini CLI's own record of a session: its home, its projects, its chat files (adapters/gemini-cli.md GM §2).

Why a module of its own: the same files answer discovery (which chat a process writes), the
tmux transport's delivery evidence (a `user` record carrying exactly the typed line), and the
turn reply (the `gemini` records after it). Read-only, streaming: a chat file is JSONL that
only grows, so a reader remembers its offset (`turn_reply.Tail`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

import relay_repl.store.jsonl as jsonl

HOME_ENV = "GEMINI_CLI_HOME"
CHAT_RE = re.compile(r"^session-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2})-([0-9a-f]{8})\.jsonl$")


def gemini_dir(env: Mapping[str, str]) -> Path:
    """`$GEMINI_CLI_HOME/.gemini`, else `$HOME/.gemini` (GM §1)."""
    base = env.get(HOME_ENV) or env.get("HOME") or os.path.expanduser("~")
    return Path(base) / ".gemini"


def projects(gdir: Path) -> dict[str, str]:
    """`projects.json`: project root -> short id (the chat directory's name)."""
    from relay_repl.core.errors import FileProblem
    from relay_repl.store.loader import read_text

    try:  # the client's file, through the one loader: a FIFO there never hangs discovery
        data = json.loads(read_text(gdir / "projects.json", "Gemini CLI rewrites it", missing_ok=True) or "{}")
    except (FileProblem, ValueError, RecursionError):
        return {}
    found = data.get("projects") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def project_id(gdir: Path, root: str) -> str | None:
    """The short id the CLI gave project `root`, or None before its first start there."""
    return projects(gdir).get(root.rstrip("/") or "/")


class ChatHeader(BaseModel):
    """Line 1 of a chat file (plus `$set` updates)."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)  # built on first use, off the targets path

    sessionId: str
    projectHash: str | None = None
    startTime: str | None = None
    lastUpdated: str | None = None
    kind: str | None = None


class Chat(BaseModel):
    """One chat file and what its header says."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    path: Path
    project: str
    session_id: str
    start_time: str | None = None

    @property
    def short(self) -> str:
        return self.session_id[:8]


def read_header(path: Path) -> ChatHeader | None:
    try:
        with path.open("rb") as fh:
            first = fh.readline()
    except OSError:
        return None
    rec = jsonl.parse_object(first)
    if rec is None:
        return None
    try:
        return ChatHeader.model_validate(rec)
    except ValueError:
        return None


def chats(gdir: Path, project: str) -> list[Chat]:
    """Every chat file of one project, oldest first (by the header's start time)."""
    d = gdir / "tmp" / project / "chats"
    try:
        names = os.listdir(d)
    except OSError:
        return []
    found: list[Chat] = []
    for name in names:
        if not CHAT_RE.match(name):
            continue
        head = read_header(d / name)
        if head is not None:
            found.append(Chat(path=d / name, project=project, session_id=head.sessionId, start_time=head.startTime))
    return sorted(found, key=lambda c: (c.start_time or "", c.path.name))


def find_chat(gdir: Path, session: str) -> Chat | None:
    """The chat file of a session id (or its 8-hex prefix), in any project."""
    root = gdir / "tmp"
    try:
        dirs = os.listdir(root)
    except OSError:
        return None
    for project in dirs:
        for chat in chats(gdir, project):
            if chat.session_id == session or chat.short == session:
                return chat
    return None


def records(path: Path, offset: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """(offset of the line, record) for every complete message record from `offset` (no header, no `$set`)."""
    for at, raw in jsonl.complete_lines(path, offset):
        rec = jsonl.parse_object(raw)
        if rec is None or "$set" in rec or "sessionId" in rec and "type" not in rec:
            continue
        yield at, rec


def user_text(rec: Mapping[str, Any]) -> str | None:
    """The text of a typed `user` record (`content: [{"text": ...}]`), None for any other record."""
    if rec.get("type") != "user":
        return None
    content = rec.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    texts = [c.get("text") for c in content if isinstance(c, dict)]
    if any(not isinstance(t, str) for t in texts):
        return None  # a functionResponse (a tool result), not typed text
    return "".join(t for t in texts if isinstance(t, str))


def typed_records(path: Path, offset: int, payload: str) -> list[dict[str, Any]]:
    """The `user` records from `offset` whose text is exactly `payload`, with their line offset."""
    hits: list[dict[str, Any]] = []
    for at, rec in records(path, offset):
        if user_text(rec) == payload:
            hits.append({"offset": at, "id": rec.get("id"), "timestamp": rec.get("timestamp")})
    return hits


def model_text(rec: Mapping[str, Any]) -> str | None:
    """The text a `gemini` record says (its `content`), None for other records."""
    if rec.get("type") != "gemini":
        return None
    content = rec.get("content")
    return content if isinstance(content, str) else None
