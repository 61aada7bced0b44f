"""The operator inbox's Claude peer record and the plan of writing it, over plain values (standard library).

Why apart from peer.py: a Claude run's first plan is this listing's (`relay run ping -p
target=claude:NAME`: the runner lists the inbox first), and issue 40 wants that plan on screen before
pydantic is loaded (frontends/run_plain.py, through plain_plan.py's `inbox_listing_plan`). Both that
path and the models' `ClaudePeerRegistration` build the record, its file names and the plan's words
here, once, so the two cannot drift. Loaded by file on the plain path (the agents package imports
pydantic): nothing but the standard library here.

The values drawn at random or from the clock (the record's `sessionId`, its `now` in ms, the socket's
random suffix when `<pid>.sock` is taken) may be pinned (`draft(pins=...)`): the plain phase draws
them, shows the plan, and the models build the very same record from the same pins.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
import uuid
from pathlib import Path
from typing import Any

from relay_repl.system.proc import proc_start, same_process

PINS = ("session_id", "now", "token")
"""What `draft` may be given instead of drawing it: sessionId, the time in ms, the socket name's suffix."""


def pid_domain() -> str:
    """The record's `pidDomain`: this machine and its pid namespace."""
    try:
        machine = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine = "unknown"
    try:
        ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        ns = "pid:[0]"
    return f"linux:{machine}:{ns}"


def live_records(cfg: Path) -> list[dict[str, Any]]:
    """Live registry records (pid alive and procStart matching), newest first."""
    out = []
    for f in (cfg / "sessions").glob("*.json"):
        if not f.stem.isdigit():
            continue
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        pid = rec.get("pid")
        # the one liveness rule (system.proc): pid alive, not a zombie, procStart equal
        if isinstance(pid, int) and pid != os.getpid() and same_process(pid, rec.get("procStart"))[0]:
            out.append(rec)
    return sorted(out, key=lambda r: r.get("startedAt", 0), reverse=True)


class Draft:
    """The record to write and where: what `ClaudePeerRegistration` holds and its plan shows."""

    __slots__ = ("cfg", "name", "anchor", "socket_path", "record_path", "key_path", "record", "start", "pins")
    cfg: Path
    name: str
    anchor: dict[str, Any]
    socket_path: Path
    record_path: Path
    key_path: Path
    record: dict[str, Any]
    start: str
    pins: dict[str, Any]

    def __init__(self, **kw: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kw[k])


def draft(*, name: str, claude_version: str, cfg: Path, pins: dict[str, Any] | None = None) -> Draft | None:
    """The record listing the inbox under `name` (another name when a live session has it), its socket in
    the socket directory of the newest live session that has one, or None when none has one. `pins`:
    values drawn before (PINS), used instead of drawing them; the ones used are in `Draft.pins`."""
    pins = pins or {}
    peers = live_records(cfg)
    with_sock = [r for r in peers if r.get("messagingSocketPath")]
    if not with_sock:
        return None
    anchor = with_sock[0]
    socket_dir = Path(anchor["messagingSocketPath"]).parent
    taken = {r.get("name") for r in peers}
    if name in taken:
        name = f"{name}-{os.getpid()}"
    drawn: dict[str, Any] = {}
    socket_path = socket_dir / f"{os.getpid()}.sock"
    token = pins.get("token")
    while socket_path.exists() or socket_path.is_symlink():
        # never replace a file we did not create (a dead session's socket under a reused
        # pid, say): a fresh name, as Claude itself does (claude-code.md section 3.1)
        drawn["token"] = token if isinstance(token, str) and token else secrets.token_hex(4)
        token = None  # a pinned name taken meanwhile: the next is drawn
        socket_path = socket_dir / f"{os.getpid()}-{drawn['token']}.sock"
    record_path = cfg / "sessions" / f"{os.getpid()}.json"
    digest = hashlib.sha256(str(socket_path).encode()).hexdigest()
    key_path = cfg / "sessions" / f"{os.getpid()}.{digest}.key"
    now = pins.get("now")
    now = now if isinstance(now, int) else int(time.time() * 1000)
    session_id = pins.get("session_id")
    session_id = session_id if isinstance(session_id, str) else str(uuid.uuid4())
    drawn.update(session_id=session_id, now=now)
    start = proc_start(os.getpid()) or ""
    record: dict[str, Any] = {
        "pid": os.getpid(),
        "sessionId": session_id,
        "cwd": os.getcwd(),
        "startedAt": now,
        "procStart": start,
        "version": claude_version,
        "peerProtocol": 1,
        "peerFeatures": [],
        "kind": "interactive",
        "entrypoint": "relay-repl",
        "pidDomain": pid_domain(),
        "messagingSocketPath": str(socket_path),
        "name": name,
        "nameSource": "user",
        "nameSince": now,
        "updatedAt": now,
        "status": "idle",
        "statusUpdatedAt": now,
    }
    return Draft(cfg=cfg, name=name, anchor=anchor, socket_path=socket_path, record_path=record_path,
                 key_path=key_path, record=record, start=start, pins=drawn)


def plan_parts(d: Draft) -> dict[str, Any]:
    """The plan of writing `d` (`core.plan.Plan`'s fields): what the gate shows before it is written."""
    return {
        "action": "list the operator inbox as a Claude peer",
        "target": f"Claude registry {d.cfg}/sessions (read by `claude agents --json` and ListAgents)",
        "identified_by": (
            f"socket directory of live session {d.anchor.get('name')} (pid {d.anchor.get('pid')}) "
            "from its registry record"
        ),
        "transport": f"write {d.record_path.name} + key file; listen on {d.socket_path}",
        "fallback": "none: `relay reply` still reaches the inbox without it",
        "payload": json.dumps(d.record, separators=(",", ":")),
        "delivered_when": f"`claude agents --json` lists {d.name!r} with pid {os.getpid()}",
        "notes": ("removed again when the REPL exits; a crash is cleaned by the next start",),
        "files": plan_files(d),
    }


def plan_files(d: Draft) -> tuple[str, ...]:
    """Every file `write` and the listener create or replace (a file already at the
    record's or key's name is a dead process's leftover under our reused pid: no
    live process can hold our pid)."""
    def verb(p: Path) -> str:
        return f"replaces {p} (left there by a dead process that had pid {os.getpid()})" if p.exists() \
            else f"creates {p}"

    return (f"{verb(d.record_path)}: the registry record (payload 3)",
            f"{verb(d.key_path)}: its key file (mode 0600, a fresh peerToken)",
            f"creates {d.socket_path}: the listening socket Claude sessions reply to")
