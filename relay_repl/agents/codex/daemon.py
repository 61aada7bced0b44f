"""One JSON-RPC connection to the Codex daemon's control socket (codex.md §2.5), for every caller.

JSON-RPC over WebSocket text frames over the Unix socket: `initialize` with `experimentalApi`,
the `initialized` notification, then the caller's requests, pipelined; notifications are
skipped while waiting for response ids. Discovery asks `thread/loaded/list` and `thread/read`
(provider.daemon_thread_status); the queue transport asks `thread/queue/add` (queue_ops), the
call `codex queue` itself makes, without starting a process for it, on a connection kept for the
event loop's life (`kept_call`): the WebSocket handshake and `initialize` were most of a send's
cost to relay (issue 33).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import weakref
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
        self.ws = ws
        self._next = 1

    async def request(self, method: str, params: dict[str, Any]) -> int:
        """Send one request; its id (answers come through `collect`)."""
        n = self._next
        self._next += 1
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}))
        return n

    async def collect(self, ids: set[int]) -> dict[int, dict[str, Any]]:
        """The answers to `ids` (notifications and other ids are skipped)."""
        got: dict[int, dict[str, Any]] = {}
        while ids - set(got):
            msg = json.loads(await self.ws.recv())
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
            yield await _initialized(ws, client_name, title)
    except (OSError, WebSocketException, ValueError) as exc:
        raise DaemonError(describe(exc, "asking the Codex daemon")) from exc


KEPT_OPT_OUT = ("thread/status/changed", "thread/readState/changed", "remoteControl/status/changed")
"""Notifications a kept connection asks the daemon not to push (`initialize`'s
`optOutNotificationMethods`): relay reads only the answers to its own requests on it, and the daemon
pushed these to every connection, ~4 per Codex send in an ask-all (52 of 67 frames read; issue 33),
each parsed by relay's own process; with a connection per concurrent send, more connections, more
copies."""


async def _initialized(ws: ClientConnection, client_name: str, title: str,
                       opt_out: tuple[str, ...] = ()) -> DaemonConnection:
    """`initialize` (with experimentalApi; `opt_out`: notification methods not to be sent) answered,
    `initialized` sent: the connection callers use."""
    capabilities: dict[str, Any] = {"experimentalApi": True}
    if opt_out:
        capabilities["optOutNotificationMethods"] = list(opt_out)
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "clientInfo": {"name": client_name, "title": title, "version": "0.1"},
        "capabilities": capabilities}}))
    conn = DaemonConnection(ws)
    init = (await conn.collect({0}))[0]
    if "error" in init:
        raise DaemonError(f"initialize refused: {init['error'].get('message', init['error'])}")
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized"}))
    return conn


# -- one connection per daemon, kept ----------------------------------------------------------------

IDLE_CLOSE = 30.0
"""Seconds a kept connection may sit unused before the next call opens a fresh one: what the daemon
pushed meanwhile (notifications) waits unread in it, so none is kept forever."""


class NotAsked(DaemonError):
    """The request never left: no connection could be made, `initialize` was refused, or the time
    ran out before it was sent (`timed_out`)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class _Kept:
    """One initialized connection to one daemon, and what ends it with the event loop: an async
    generator suspended until the loop's shutdown (`shutdown_asyncgens`, which anyio.run and
    asyncio.run call) closes it, which drops the connection (no await in there: it runs beside
    the loop's other generators being closed)."""

    def __init__(self, target: str, conn: DaemonConnection) -> None:
        self.target = target
        self.conn = conn
        self.used = time.monotonic()
        self.busy = False  # a call is on it: one request in flight per connection
        self.ender = _until_the_loop_ends(self)

    def usable(self) -> bool:
        """Open (no close or EOF seen: a daemon that exited or dropped it shows here) and not idle
        too long."""
        from websockets.protocol import State

        return self.conn.ws.state is State.OPEN and time.monotonic() - self.used < IDLE_CLOSE

    def abort(self) -> None:
        """Drop it at once, with no close handshake (after a failed call its state is unknown)."""
        transport = getattr(self.conn.ws, "transport", None)
        if transport is not None:
            transport.abort()


async def _until_the_loop_ends(kept: _Kept) -> AsyncIterator[None]:
    try:
        yield
    finally:
        kept.abort()


_KEPT: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, list[_Kept]]] = weakref.WeakKeyDictionary()


async def _connect(target: str, timeout: float, title: str) -> _Kept:
    """A new kept connection to the daemon listening at `target`; NotAsked when none could be made."""
    from websockets.asyncio.client import unix_connect
    from websockets.exceptions import WebSocketException

    ws = None
    try:
        ws = await unix_connect(target, uri="ws://localhost/", max_size=None, open_timeout=timeout,
                                close_timeout=0.5, compression=None,
                                ping_interval=None,  # no keepalive task beside the caller's
                                max_queue=None)  # what the daemon pushes while it idles is buffered, never backs up into it
        kept = _Kept(target, await _initialized(ws, "relay-repl", title, opt_out=KEPT_OPT_OUT))
    except BaseException as exc:
        if ws is not None and ws.transport is not None:
            ws.transport.abort()
        if isinstance(exc, DaemonError):
            raise NotAsked(str(exc)) from exc
        if isinstance(exc, (OSError, WebSocketException, ValueError)) and not isinstance(exc, TimeoutError):
            raise NotAsked(describe(exc, "asking the Codex daemon")) from exc
        raise
    await kept.ender.__anext__()  # registered with the loop: its shutdown closes the generator, which drops it
    return kept


def kept_connections() -> int:
    """How many daemon connections this event loop keeps open now (tests, the bench)."""
    return sum(1 for pool in _KEPT.get(asyncio.get_running_loop(), {}).values() for k in pool if k.usable())


async def kept_call(socket_path: Path | str, method: str, params: dict[str, Any], *, timeout: float = 3.0,
                    title: str = "relay_repl") -> dict[str, Any]:
    """One request on a connection this event loop keeps to the daemon at `socket_path`, and its
    answer (the JSON-RPC message, `result` or `error`). Connections are made on first use and kept,
    so a run of sends pays the WebSocket handshake and `initialize` once per daemon, not once per
    send (issue 33). One request is in flight per connection; a call that finds every kept one busy
    (an ask-all's sends to one daemon at once) opens one more, so concurrent sends still reach the
    daemon side by side (as many connections as were ever busy at once, then reused).

    A kept connection found closed (the daemon exited, restarted or dropped it), idle IDLE_CLOSE
    seconds, or made to a socket the path no longer points at (a new daemon), is dropped before
    anything is sent on it. Raises NotAsked when nothing left (no connection, `initialize` refused,
    `timeout` seconds passed first); DaemonError once the request may have left and no answer came
    within `timeout` (the connection dropped, the daemon starved): then it may have been done. A
    connection a call failed or was cancelled on is dropped, never reused."""
    import anyio
    from websockets.exceptions import WebSocketException

    loop = asyncio.get_running_loop()
    pool = _KEPT.setdefault(loop, {}).setdefault(os.fspath(socket_path), [])
    # the control socket is a symlink into /tmp/codex-daemon-<uid>/ (daemon_connection): a new
    # daemon may point it elsewhere, and the target decides whether a kept connection fits
    target = os.path.realpath(socket_path)
    sent = False
    try:
        with anyio.fail_after(timeout):
            for gone in [k for k in pool if not k.busy and (k.target != target or not k.usable())]:
                pool.remove(gone)
                gone.abort()
            k = next((k for k in pool if not k.busy), None)  # no await since the check: it is still free
            if k is None:
                k = await _connect(target, timeout, title)
                pool.append(k)
            k.busy = True
            try:
                sent = True
                n = await k.conn.request(method, params)
                answer = (await k.conn.collect({n}))[n]
            except BaseException:
                if k in pool:
                    pool.remove(k)
                k.abort()  # failed or cancelled mid-call: its state is unknown
                raise
            finally:
                k.busy = False
            k.used = time.monotonic()
            return answer
    except TimeoutError as exc:
        if not sent:
            raise NotAsked(f"no answer within {timeout:g}s", timed_out=True) from exc
        raise DaemonError(f"no answer within {timeout:g}s") from exc
    except (OSError, WebSocketException, ValueError) as exc:
        raise DaemonError(describe(exc, "asking the Codex daemon")) from exc


async def close_kept() -> None:
    """Close this event loop's kept daemon connections now (the loop's shutdown does it otherwise)."""
    for pool in list(_KEPT.pop(asyncio.get_running_loop(), {}).values()):
        for k in pool:
            await k.conn.ws.close()
