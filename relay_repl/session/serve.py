"""`relay serve --stdio`: this machine's relay, answering another relay over an ssh channel.

Why stdio and not a port: ssh already authenticated the caller and carries the bytes;
no listening surface, no daemon. One JSON request per line in, one JSON answer per line
out (core/serve_wire.py), in order; the process lives as long as the channel.

Discovery here is this host's (its registries, its /proc): the caller only relays it.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

import anyio

from relay_repl import __version__
from relay_repl.core.errors import ProtocolMismatch, RelayError, UsageError
from relay_repl.core.serve_wire import MAX_LINE, PROTOCOL_VERSION, Answer, Request, mismatch

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


def target_json(t) -> dict:
    """A target as `relay targets --json` prints it and the channel carries it."""
    return {
        "kind": t.kind, "prefix": t.prefix, "name": t.name, "spec": t.spec, "address": t.address, "pid": t.pid,
        "live": t.live, "state": t.state, "pane": t.pane, "transports": list(t.transports),
        "identified_by": t.identified_by, "client_version": t.client_version, "client_status": t.client_status,
        "detail": t.detail, "host": t.host,
    }


class Server:
    """The ops one relay answers for another. Each returns a JSON-able result or raises a
    RelayError, whose one line goes back as the answer's error."""

    def __init__(self) -> None:
        self.ops: dict[str, Handler] = {"hello": self.hello, "targets": self.targets}

    async def hello(self, args: dict[str, Any]) -> dict[str, Any]:
        theirs = args.get("protocol")
        if theirs != PROTOCOL_VERSION:
            raise ProtocolMismatch(mismatch(theirs, who="the calling relay"))
        return {"protocol": PROTOCOL_VERSION, "relay": __version__, "pid": os.getpid(),
                "hostname": socket.gethostname()}

    async def targets(self, args: dict[str, Any]) -> list[dict]:
        from relay_repl.agents import default_providers
        from relay_repl.agents.discovery import discover_all

        return [target_json(t) for t in await discover_all(list(default_providers()))]

    async def answer(self, line: bytes) -> Answer:
        import json

        try:
            data = json.loads(line)
        except ValueError:
            return Answer(id=None, ok=False, error="not a JSON line", error_kind="UsageError")
        if isinstance(data, dict) and data.get("v") != PROTOCOL_VERSION:
            return Answer(id=data.get("id") if isinstance(data.get("id"), int) else None, ok=False,
                          error=mismatch(data.get("v"), who="the calling relay"), error_kind="ProtocolMismatch")
        try:
            req = Request.model_validate(data)
        except ValueError as exc:
            return Answer(id=None, ok=False, error=f"malformed request: {str(exc).splitlines()[0]}",
                          error_kind="UsageError")
        op = self.ops.get(req.op)
        if op is None:
            return Answer(id=req.id, ok=False, error=f"unknown op {req.op!r}", error_kind="UsageError")
        try:
            return Answer(id=req.id, ok=True, result=await op(req.args))
        except RelayError as exc:
            return Answer(id=req.id, ok=False, error=str(exc), error_kind=type(exc).__name__)


async def serve(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None, server: Server | None = None) -> None:
    """Answer requests line by line until the channel closes (EOF on stdin)."""
    src = stdin or sys.stdin.buffer
    out = stdout or sys.stdout.buffer
    server = server or Server()
    while True:
        line = await anyio.to_thread.run_sync(src.readline, MAX_LINE, abandon_on_cancel=True)
        if not line:
            return
        if not line.strip():
            continue
        ans = await server.answer(line)
        out.write(ans.model_dump_json().encode() + b"\n")
        out.flush()


def run_stdio() -> int:
    if sys.stdin.isatty():
        raise UsageError("relay serve --stdio answers another relay over ssh; it is not for a terminal")
    anyio.run(serve)
    return 0
