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


HEADER_STRINGS = ("projectHash", "startTime", "lastUpdated", "kind")
"""The chat header's optional fields besides `sessionId`: each a string or null (absent is null)."""


class ChatHeader:
    """Line 1 of a chat file (plus `$set` updates): what discovery reads of it.

    Read with the standard library, not a pydantic model: `relay targets` ties a Gemini session to
    its chat file on its standard-library path too (plain_listing.py, issue 40). The rule is the
    one the model applied to a JSON object: `sessionId` a string, the HEADER_STRINGS strings or
    null, anything else ignored; a value of another type refuses the header (the model's pydantic
    str took no number, bool or list)."""

    __slots__ = ("sessionId", "projectHash", "startTime", "lastUpdated", "kind")

    sessionId: str
    projectHash: str | None
    startTime: str | None
    lastUpdated: str | None
    kind: str | None

    def __init__(self, rec: Mapping[str, Any]) -> None:
        sid = rec.get("sessionId")
        if type(sid) is not str or any(rec.get(k) is not None and type(rec[k]) is not str for k in HEADER_STRINGS):
            raise ValueError("a chat header is a sessionId string and optional strings")
        self.sessionId = sid
        self.projectHash, self.startTime, self.lastUpdated, self.kind = (rec.get(k) for k in HEADER_STRINGS)


class Chat:
    """One chat file and what its header says (a plain value: it crosses no boundary)."""

    __slots__ = ("path", "project", "session_id", "start_time")

    def __init__(self, path: Path, project: str, session_id: str, start_time: str | None = None) -> None:
        self.path, self.project, self.session_id, self.start_time = path, project, session_id, start_time

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chat) and (self.path, self.project, self.session_id, self.start_time) == (
            other.path, other.project, other.session_id, other.start_time)

    def __hash__(self) -> int:
        return hash((self.path, self.session_id))

    def __repr__(self) -> str:
        return f"Chat(path={self.path!r}, project={self.project!r}, session_id={self.session_id!r})"

    @property
    def short(self) -> str:
        return self.session_id[:8]


def read_header(path: Path) -> ChatHeader | None:
    try:
        with path.open("rb") as fh:
            first = fh.readline()
    except OSError:
        return None
    from relay_repl.store.jsonl import parse_object  # on first use: a listing with no session of ours reads no chat

    rec = parse_object(first)
    if rec is None:
        return None
    try:
        return ChatHeader(rec)
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
    import relay_repl.store.jsonl as jsonl

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
