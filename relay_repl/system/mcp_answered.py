"""A record of what a `relay mcp` server has answered, for whoever started its client (the lab).

Why: an agent CLI may take prompts before its MCP servers are ready and hold them. Gemini CLI
0.61.0 queues a prompt submitted while its MCP discovery runs (`Waiting for MCP servers to
initialize... prompts will be queued`) and sends it only when discovery completes; its screen
shows nothing of that discovery until a prompt is queued (adapters/gemini-cli.md, GM §6). The
server's side of the handshake is evidence the client's screen does not give: with `ENV` set to
a directory, the server writes `<its pid>.json` there once an answer has been written to the
client (`{"pid", "ppid", "methods", "at"}`: every method answered so far, `at` the last), one
file per server process, rewritten after each answer of a method not answered before.
Only the lab sets `ENV`; without it the server writes nothing.

Kept in `system` (standard library only): the server (session layer) writes these records at its
start, where nothing heavy may be imported, and an agent kind's lab readiness reads them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

ENV = "RELAY_MCP_ANSWERED_DIR"
_methods: set[str] = set()  # what this process has answered (one server per process)


def record(method: str, env: Mapping[str, str] | None = None) -> None:
    """Note that this server process has answered `method` (nothing when `ENV` is not set).
    Written to a temporary name and renamed, so a reader never sees half a record."""
    where = (os.environ if env is None else env).get(ENV)
    if not where or method in _methods:
        return
    _methods.add(method)
    d = Path(where)
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = {"pid": os.getpid(), "ppid": os.getppid(), "methods": sorted(_methods), "at": time.time()}
        tmp = d / f".{os.getpid()}.tmp"
        tmp.write_text(json.dumps(body) + "\n", encoding="utf-8")
        os.replace(tmp, d / f"{os.getpid()}.json")
    except OSError:
        pass  # a record is evidence for the lab, never a reason to fail the client's handshake


def answered(directory: Path, method: str, parents: Collection[int] | None = None) -> list[dict[str, Any]]:
    """The records in `directory` of servers that have answered `method` (oldest first), only those
    whose parent is one of `parents` when given."""
    out: list[dict[str, Any]] = []
    try:
        files = sorted(directory.glob("*.json"))
    except OSError:
        return out
    for f in files:
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(rec, dict) or method not in (rec.get("methods") or ()):
            continue
        if parents is None or rec.get("ppid") in parents:
            out.append(rec)
    return sorted(out, key=lambda r: r.get("at") or 0)
