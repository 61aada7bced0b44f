"""Awaits that complete at once, so a one-shot listing runs its coroutines without an event loop.

`relay targets` is a cold start measured against `claude agents --json` alone. Discovery is
async (the REPL refreshes while it waits for input), but a one-shot listing has nothing to
overlap on this thread: the Claude listing is a subprocess started before the imports
(system/prefetch.py). Under `anyio.run` the listing paid for importing asyncio (which pulls
ssl, concurrent.futures, logging) and anyio's asyncio backend (its socket, TLS and stream
modules), about a quarter of the process's CPU on a loaded machine (`-X importtime`).

Discovery's blocking steps (a thread hop, a subprocess, a nested async client) go through the
helpers below. Inside `run()` they do the work directly and never suspend, so `run()` drives
the coroutine with one `send(None)`; anywhere else they are the anyio calls they replace.
A coroutine that still suspends inside `run()`, or asks anyio or asyncio for the loop (an await
not routed through here), is abandoned and run again under `anyio.run`: discovery only reads, so
running it twice is safe.
"""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_ACTIVE: ContextVar[bool] = ContextVar("relay_loopless", default=False)


def active() -> bool:
    """Whether the caller runs inside `run()` (no event loop: block, never suspend)."""
    return _ACTIVE.get()


def run(fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """`fn(*args)` to completion with no event loop; under `anyio.run` if it suspends."""
    token = _ACTIVE.set(True)
    try:
        coro = fn(*args)
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        except RuntimeError:
            pass  # anyio or asyncio asked for the event loop this run has not got (or a real error: raised again below)
        else:
            try:
                coro.close()
            except BaseException:  # noqa: BLE001 - its cleanup may itself want the loop it never had
                pass
    finally:
        _ACTIVE.reset(token)
    import anyio

    return anyio.run(fn, *args)


async def to_thread(fn: Callable[..., T], *args: Any) -> T:
    """`anyio.to_thread.run_sync(fn, *args)`; inside `run()`, `fn(*args)` here."""
    if active():
        return fn(*args)
    import anyio

    return await anyio.to_thread.run_sync(fn, *args)


async def run_process(cmd: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None
                      ) -> subprocess.CompletedProcess[bytes]:
    """`cmd`'s exit code and output (stdin /dev/null); TimeoutError after `timeout` seconds."""
    if active():
        try:
            return subprocess.run(list(cmd), capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout,
                                  env=None if env is None else dict(env), check=False)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{cmd[0]} did not answer within {timeout:g}s") from None
    import anyio

    with anyio.fail_after(timeout):
        return await anyio.run_process(list(cmd), check=False, env=None if env is None else dict(env),
                                       stdin=subprocess.DEVNULL)


async def call_async(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`await fn(*args)`, for a step that needs a real event loop (a WebSocket client);
    inside `run()` it gets one of its own, for that step alone."""
    if active():
        import anyio

        async def step() -> T:
            return await fn(*args)

        token = _ACTIVE.set(False)
        try:
            return anyio.run(step)
        finally:
            _ACTIVE.reset(token)
    return await fn(*args)
