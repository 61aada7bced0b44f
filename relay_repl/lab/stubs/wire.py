"""What every stub model API writes the same way: a server-sent-event stream with a hold.

Each API module (`apis.api(name)`) renders its own events; this writes them, holding between the
prelude (the client shows itself busy) and the rest without blocking the loop, so one stub server
holds many sessions at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from relay_repl.lab.stubs.script import Reply

TICK = 0.25  # how often a hold checks that the client is still there
PING_EVERY = 5.0  # keep-alive pings during a hold, for an API that has them

Event = tuple[str, dict[str, Any]]


def named_event(event: Event) -> bytes:
    """One server-sent event with its `event:` name line (Anthropic's and OpenAI's streams; Google's
    carries data lines only)."""
    import json

    name, data = event
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def model_in_body(path: str, body: Any) -> str:
    """The model a request body names (`stub-model` when it names none): `StubApi.model` for an API
    that names it in the body (Anthropic's, OpenAI's), whatever the path."""
    return str(body.get("model", "stub-model")) if isinstance(body, dict) else "stub-model"


def path_reason(method: str, path: str, body: Any, chat: str, counts: str = "", no_tools: str = "no tools") -> str | None:
    """Why a request to an API with one chat path (ending `chat`) is not a chat turn (None = a turn):
    a probe (not a POST), a token count (a path ending `/<counts>`), another path, no JSON object
    body, or no tools offered (the client's helper calls)."""
    if method != "POST":
        return f"{method.lower()} probe"
    end = path.rstrip("/")
    if counts and end.endswith(f"/{counts}"):
        return counts
    if not end.endswith(chat):
        return "unknown endpoint"
    if not isinstance(body, dict):
        return "no json body"
    return None if body.get("tools") else no_tools


def new_id(prefix: str) -> str:
    """A fresh id in the API's own style (`msg_stub…`, `resp_stub…`)."""
    import uuid

    return f"{prefix}_stub{uuid.uuid4().hex[:20]}"


def fixed_answer(
    request: web.Request, body: Any, chat: str, missing: dict[str, Any],
    probes: dict[str, Any] | None = None, posts: dict[str, Any] | None = None,
) -> web.Response | None:
    """The answer to a request that is not a chat turn, or None for a chat turn (a POST to a path
    ending `chat`, with a JSON object body). A probe (GET/HEAD) gets the `probes` answer its path
    ends with (`{}` otherwise); a POST to a path ending with a `posts` key gets that fixed answer
    (token counts); anything else a 404 with `missing`, the API's own error shape, in which `{path}`
    in any string value is the request's path."""
    path = request.path.rstrip("/")
    if request.method in ("GET", "HEAD"):
        return web.json_response(next((a for end, a in (probes or {}).items() if path.endswith(end)), {}))
    for end, answer in (posts or {}).items():
        if path.endswith(end):
            return web.json_response(answer)
    if not path.endswith(chat) or not isinstance(body, dict):
        return web.json_response(_filled(missing, request.path), status=404)
    return None


def _filled(value: Any, path: str) -> Any:
    if isinstance(value, dict):
        return {k: _filled(v, path) for k, v in value.items()}
    return value.replace("{path}", path) if isinstance(value, str) else value


async def turn(
    request: web.Request,
    hold: float,
    streamed: bool,
    whole: Callable[[], Any],
    events: Callable[[], tuple[list[Event], list[Event]]],
    encode: Callable[[Event], bytes],
    ping: bytes | None,
    released: Callable[[], bool],
) -> tuple[web.StreamResponse, bool]:
    """A chat turn's answer after its hold: `whole()` as one JSON answer, or, when the client asked
    for a stream, `events()` (prelude, rest) written by `sse`. Returns the response and whether it
    was delivered whole."""
    if not streamed:
        await asyncio.sleep(hold)
        return web.json_response(whole()), True
    prelude, rest = events()
    return await sse(request, prelude, rest, hold, encode, ping, released)


def one_path_api(
    chat: str, missing: dict[str, Any], streamed: Callable[[dict[str, Any]], bool],
    whole: Callable[[Reply, str], Any], events: Callable[[Reply, str], tuple[list[Event], list[Event]]],
    encode: Callable[[Event], bytes], ping: bytes | None,
    probes: dict[str, Any] | None = None, posts: dict[str, Any] | None = None,
) -> Callable[..., Awaitable[tuple[web.StreamResponse, bool]]]:
    """`StubApi.respond` for an API with one chat path (Anthropic's `/v1/messages`, OpenAI's
    `/responses`): probes, fixed posts and unknown paths answered by `fixed_answer`, a chat turn by
    `turn`, whole or streamed as the body asks (`streamed(body)`)."""

    async def respond(
        request: web.Request, body: Any, reason: str | None, reply: Reply, model: str, released: Callable[[], bool],
    ) -> tuple[web.StreamResponse, bool]:
        fixed = fixed_answer(request, body, chat, missing, probes=probes, posts=posts)
        if fixed is not None:
            return fixed, True
        return await turn(request, reply.hold, streamed(body), lambda: whole(reply, model),
                          lambda: events(reply, model), encode, ping, released)

    return respond


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
