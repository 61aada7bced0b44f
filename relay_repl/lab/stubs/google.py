"""Gemini API (generativelanguage v1beta), as much of it as Gemini CLI 0.61.0 needs from a stub.

Pure functions, mirroring `anthropic.py` and `openai.py`: read what the client last said,
tell the chat's turns from the CLI's side requests, and render a `Reply` as the chunks of
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (each chunk one `data:` line,
no event names, no keep-alive). The server writes the prelude (a chunk with an empty text
part, so the client shows itself busy), holds, then the body.

Tool names: a script names MCP tools the way Claude Code does, `mcp__<server>__<tool>`;
Gemini CLI offers them as `mcp_<server>_<tool>` (adapters/gemini-cli.md), so the stub
renames on the way out and one script serves every stub.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web

from relay_repl.lab.stubs.script import LastInput, Reply
from relay_repl.lab.stubs.wire import model_in_body, sse, turn

SSE = tuple[str, dict[str, Any]]
SIDE_TEXT = "stub side reply"
CONTEXT_START = "<session_context>"


def _offered_tools(body: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            for decl in tool.get("functionDeclarations") or []:
                if isinstance(decl, dict) and decl.get("name"):
                    names.append(str(decl["name"]))
    return names


def last_input(body: dict[str, Any]) -> LastInput:
    """The last `role:"user"` content: its text parts joined, or its function responses.

    The first turn's content also carries the CLI's `<session_context>` part (date, OS,
    folder listing); it is dropped unless nothing else is left, so a rule sees what the
    human (or the peer) said. Gemini CLI sends a function's result back as a user content holding `functionResponse`
    parts (their `response.output`, or the whole response as JSON).
    """
    tools = _offered_tools(body)
    for content in reversed(body.get("contents") or []):
        if not isinstance(content, dict) or content.get("role", "user") != "user":
            continue
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        results = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        if results:
            texts: list[str] = []
            for res in results:
                resp = res.get("response")
                out = resp.get("output") if isinstance(resp, dict) and "output" in resp else resp
                texts.append(out if isinstance(out, str) else json.dumps(out))
            return LastInput(text="\n".join(texts), tool_result=True, tools=tools)
        texts = [str(p["text"]) for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
        said = [t for t in texts if not t.lstrip().startswith(CONTEXT_START)]
        return LastInput(text="\n".join(said or texts).strip(), tools=tools)
    return LastInput(tools=tools)


def side_reason(method: str, path: str, body: Any) -> str | None:
    """Why a request is NOT a chat turn (None = a turn).

    Measured on 0.61.0 offline: the chat posts `:streamGenerateContent` with the tool
    declarations; its helpers (next-speaker and loop checks, routing, summaries) post
    `:generateContent` without tools, and `:countTokens` counts.
    """
    if method != "POST":
        return f"{method.lower()} probe"
    tail = path.rsplit(":", 1)[-1] if ":" in path else ""
    if tail == "countTokens":
        return "countTokens"
    if tail not in ("streamGenerateContent", "generateContent"):
        return "unknown endpoint"
    if not isinstance(body, dict):
        return "no json body"
    if not _offered_tools(body):
        return "no tools"
    return None


def tool_name(name: str) -> str:
    """`mcp__<server>__<tool>` (the scripts' spelling) as Gemini CLI offers it, `mcp_<server>_<tool>`."""
    if name.startswith("mcp__"):
        server, sep, tool = name[len("mcp__"):].partition("__")
        if sep and server and tool:
            return f"mcp_{server}_{tool}"
    return name


def _parts(reply: Reply) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if reply.text or reply.tool is None:
        parts.append({"text": reply.text})
    if reply.tool is not None:
        parts.append({"functionCall": {"name": tool_name(reply.tool.name), "args": dict(reply.tool.input)}})
    return parts


def _usage(reply: Reply) -> dict[str, int]:
    out = max(1, len(reply.text.split()) + (5 if reply.tool else 0))
    return {"promptTokenCount": 10, "candidatesTokenCount": out, "totalTokenCount": 10 + out}


def _chunk(parts: list[dict[str, Any]], model: str, resp_id: str, *, finish: bool, usage: dict[str, int]) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    return {"candidates": [cand], "usageMetadata": usage, "modelVersion": model, "responseId": resp_id}


def stream(reply: Reply, model: str) -> tuple[list[SSE], list[SSE]]:
    """Render `reply` as (prelude, body) chunks; the server holds between the two."""
    resp_id = f"stub{uuid.uuid4().hex[:20]}"
    usage = _usage(reply)
    prelude: list[SSE] = [("", _chunk([{"text": ""}], model, resp_id, finish=False, usage=usage))]
    body: list[SSE] = [("", _chunk(_parts(reply), model, resp_id, finish=True, usage=usage))]
    return prelude, body


def response(reply: Reply, model: str) -> dict[str, Any]:
    """The same reply as one `:generateContent` response."""
    return _chunk(_parts(reply), model, f"stub{uuid.uuid4().hex[:20]}", finish=True, usage=_usage(reply))


def _fill(schema: Any) -> Any:
    """The plainest value that fits a `responseJsonSchema`: an enum's `user` (else its first),
    "stub", 1, false, [], and every property of an object."""
    if not isinstance(schema, dict):
        return "stub"
    if schema.get("enum"):
        enum = list(schema["enum"])
        return "user" if "user" in enum else enum[0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        return {k: _fill(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return "stub"


def side_response(body: Any, model: str) -> dict[str, Any]:
    """A helper request's answer: JSON shaped by its schema when it asked for JSON (the CLI
    parses those), else text.

    The next-speaker check asks for `{"reasoning", "next_speaker"}`: answering `user` ends
    the turn where the script ended it, instead of the CLI prompting the model to go on.
    """
    cfg = body.get("generationConfig") if isinstance(body, dict) else None
    wants_json = isinstance(cfg, dict) and cfg.get("responseMimeType") == "application/json"
    text = json.dumps(_fill(cfg.get("responseJsonSchema") or cfg.get("responseSchema"))) if wants_json and isinstance(cfg, dict) else SIDE_TEXT
    return _chunk([{"text": text}], model, f"stub{uuid.uuid4().hex[:20]}", finish=True,
                  usage={"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11})


def encode(event: SSE) -> bytes:
    _, data = event
    return f"data: {json.dumps(data, separators=(',', ':'))}\r\n\r\n".encode()


# ---- the stub API protocol (stubs/apis.py) --------------------------------------------------

BASE_PATH = ""


def model(path: str, body: Any) -> str:
    """The model is in the path (`/v1beta/models/<model>:streamGenerateContent`), not the body."""
    if "/models/" in path:
        return path.split("/models/", 1)[1].split(":", 1)[0]
    return model_in_body(path, body)


async def respond(
    request: web.Request, body: Any, reason: str | None, reply: Reply, model: str, released: Callable[[], bool],
) -> tuple[web.StreamResponse, bool]:
    """The Gemini API (Google): chat turns stream (or answer whole) from the script, helpers get `side_response`."""
    if request.method in ("GET", "HEAD"):
        return web.json_response({"models": []}), True
    tail = request.path.rsplit(":", 1)[-1]
    if tail == "countTokens":
        return web.json_response({"totalTokens": 10}), True
    if tail not in ("streamGenerateContent", "generateContent") or not isinstance(body, dict):
        return web.json_response({"error": {"code": 404, "message": f"stub: no {request.path}", "status": "NOT_FOUND"}},
                                 status=404), True
    if reason is not None:
        side = side_response(body, model)
        if tail == "generateContent":
            return web.json_response(side), True
        return await sse(request, [], [("", side)], 0.0, encode, None)
    return await turn(request, reply.hold, tail == "streamGenerateContent", lambda: response(reply, model),
                      lambda: stream(reply, model), encode, None, released)
