"""What every stub model API writes the same way: a server-sent-event stream with a hold.

Each API module (`apis.api(name)`) renders its own events; this writes them, holding between the
prelude (the client shows itself busy) and the rest without blocking the loop, so one stub server
holds many sessions at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

TICK = 0.25  # how often a hold checks that the client is still there
PING_EVERY = 5.0  # keep-alive pings during a hold, for an API that has them

Event = tuple[str, dict[str, Any]]


def named_event(event: Event) -> bytes:
    """One server-sent event with its `event:` name line (Anthropic's and OpenAI's streams; Google's
    carries data lines only)."""
    import json

    name, data = event
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def body_model(body: Any) -> str:
    """The model a request body names (`stub-model` when it names none)."""
    return str(body.get("model", "stub-model")) if isinstance(body, dict) else "stub-model"


async def sse(
    request: web.Request,
    prelude: list[Event],
    events: list[Event],
    hold: float,
    encode: Callable[[Event], bytes],
    ping: bytes | None,
    released: Callable[[], bool] = lambda: False,
) -> tuple[web.StreamResponse, bool]:
    """Write prelude, hold without blocking the loop (pinging if the API has pings) until the hold
    ends or is released, then the rest. Returns the response and whether it was delivered whole."""
    resp = web.StreamResponse(
        status=200,
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "request-id": "req_stub"},
    )
    await resp.prepare(request)
    try:
        for ev in prelude:
            await resp.write(encode(ev))
        loop = asyncio.get_running_loop()
        end = loop.time() + hold
        next_ping = loop.time() + PING_EVERY
        while (left := end - loop.time()) > 0 and not released():
            await asyncio.sleep(min(left, TICK))
            transport = request.transport
            if transport is None or transport.is_closing():
                raise ConnectionResetError("client went away during hold")
            if ping is not None and loop.time() >= next_ping and end - loop.time() > 0:
                await resp.write(ping)
                next_ping += PING_EVERY
        for ev in events:
            await resp.write(encode(ev))
        await resp.write_eof()
    except ConnectionError:
        return resp, False  # the client abandoned the stream (Esc, interrupt, steer)
    return resp, True
