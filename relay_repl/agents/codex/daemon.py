"""One JSON-RPC connection to the Codex daemon's control socket (codex.md §2.5), for every caller.

JSON-RPC over WebSocket text frames over the Unix socket: `initialize` with `experimentalApi`,
the `initialized` notification, then the caller's requests, pipelined; notifications are
skipped while waiting for response ids. Discovery asks `thread/loaded/list` and `thread/read`
(provider.daemon_thread_status); the queue transport asks `thread/queue/add` (queue_ops), the
call `codex queue` itself makes, without starting a process for it.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.core.errors import DaemonError, describe

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection


class DaemonConnection:
    """An initialized connection: send requests, collect their answers by id."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._next = 1

    async def request(self, method: str, params: dict[str, Any]) -> int:
        """Send one request; its id (answers come through `collect`)."""
        n = self._next
        self._next += 1
        await self._ws.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}))
        return n

    async def collect(self, ids: set[int]) -> dict[int, dict[str, Any]]:
        """The answers to `ids` (notifications and other ids are skipped)."""
        got: dict[int, dict[str, Any]] = {}
        while ids - set(got):
            msg = json.loads(await self._ws.recv())
            if isinstance(msg, dict) and msg.get("id") in ids:
                got[msg["id"]] = msg
        return got


@asynccontextmanager
async def daemon_connection(socket_path: Path | str, timeout: float = 3.0, client_name: str = "relay-repl",
                            title: str = "relay_repl") -> AsyncIterator[DaemonConnection]:
    """Connect and initialize; raises DaemonError with a one-line reason for a refused
    `initialize` or any socket/WebSocket/JSON error inside (the caller bounds the time)."""
    from websockets.asyncio.client import unix_connect
    from websockets.exceptions import WebSocketException

    # The control socket is a symlink into /tmp/codex-daemon-<uid>/ precisely because
    # sun_path holds only 108 bytes; connect to its target so a deep CODEX_HOME works.
    target = os.path.realpath(socket_path)
    try:
        async with unix_connect(target, uri="ws://localhost/", max_size=None,
                                open_timeout=timeout, close_timeout=0.5, compression=None) as ws:
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "clientInfo": {"name": client_name, "title": title, "version": "0.1"},
                "capabilities": {"experimentalApi": True}}}))
            conn = DaemonConnection(ws)
            init = (await conn.collect({0}))[0]
            if "error" in init:
                raise DaemonError(f"initialize refused: {init['error'].get('message', init['error'])}")
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized"}))
            yield conn
    except (OSError, WebSocketException, ValueError) as exc:
        raise DaemonError(describe(exc, "asking the Codex daemon")) from exc
