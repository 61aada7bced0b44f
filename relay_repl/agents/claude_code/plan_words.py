"""Claude Code's words in a send's plan, and the reads they need, over plain values (standard library).

Why apart from socket_ops.py: `relay send`'s plain pre-plan (issue 40, agents/claude_code/plain_plan.py)
prints the plan before pydantic is loaded, and must print the very sentences the socket wire gives
the models' plan. They live here once: `socket_ops.ClaudeSocketWire.notes / frame_note /
delivered_when / free_listener` and `evidence.peer_token` call these, and so does the plain plan.
Loaded by file on the plain path (the agents package imports pydantic): nothing but the standard
library here.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets

LABEL = "Claude Code"
"""The kind's label (KindFacts.label): the runner's line before the inbox listing names it."""


def state_notes(state: str, waiting_for: str | None, *, interrupt: bool) -> tuple[str, ...]:
    """What the receiver's state means for a socket message (and what `priority: now` does)."""
    notes = []
    if state == "busy":
        notes.append("target is busy: the message is absorbed at its next tool boundary or runs as the next turn")
    if state == "waiting":
        notes.append(f"target is waiting ({waiting_for or 'dialog'}): delivery may wait for the operator there")
    if interrupt:
        notes.append("priority now: this ABORTS the receiver's running model call")
    return tuple(notes)


def frame_note(socket: object, token: bool, reply: object, *, interrupt: bool) -> str:
    """The frames written to `socket`: the auth frame when the receiver's peerToken is readable."""
    auth = "an auth frame with the receiver's peerToken, then " if token else ""
    return (f"written to {socket} as {auth}one JSON line "
            f'{{"type":"user","message":{{"role":"user","content":<payload 3>}},"msg_id":<new uuid>,'
            f'"priority":"{"now" if interrupt else "next"}"'
            + (f',"from":"uds:{reply}"' if reply else "") + "}; the receiving model reads "
            "`Another Claude session sent a message:`, then payload 3, then Claude's own advisory paragraph")


def delivered_when(spec: str, sender_pid: int) -> str:
    """The receiver evidence that counts as delivered."""
    return (f"{spec}'s transcript holds a record whose origin (or attachment.origin) has our msg_id and "
            f"verifiedPeerPid {sender_pid} (this process); Claude sends no positive receipt")


def own_listener(directory: str, pid: int | None = None) -> str:
    """`<pid>.sock` in `directory`: the receipt listener's name when nothing is there."""
    return os.path.join(directory, f"{os.getpid() if pid is None else pid}.sock")


def free_listener(directory: str) -> str:
    """`<pid>.sock` if nothing is at that name, else a fresh `<pid>-<8hex>.sock`."""
    want = own_listener(directory)
    while os.path.lexists(want):
        want = os.path.join(directory, f"{os.getpid()}-{secrets.token_hex(4)}.sock")
    return want


def config_dir(record: str | None) -> str | None:
    """`$CFG` of a session, from its registry record's path (`<cfg>/sessions/<pid>.json`)."""
    return os.path.dirname(os.path.dirname(str(record))) if record else None


def peer_token_at(cfg: str | None, socket: str | None) -> str | None:
    """The receiver's peerToken from `<cfg>/sessions/<pid>.<sha256(socket path)>.key`, if readable."""
    if not (cfg and socket):
        return None
    h = hashlib.sha256(str(socket).encode()).hexdigest()
    sessions = os.path.join(cfg, "sessions")
    try:  # what `glob("*.<h>.key")` lists, without pathlib's glob machinery (~13 ms before a plan)
        names = [n for n in os.listdir(sessions) if n.endswith(f".{h}.key") and not n.startswith(".")]
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(sessions, name), encoding="utf-8") as f:
                return str(json.loads(f.read())["peerToken"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None
