"""OpenAI Responses API, as much of it as Codex 0.169.0 needs from a stub.

Pure functions, mirroring `anthropic.py`: read the last input item, tell Codex's own
title-generation requests from the thread's turns, and render a `Reply` as the ordered
SSE events of codex.md section 7. The server holds between `prelude` (response.created)
and `body`, which is where the real service spends its thinking time too.
"""

from __future__ import annotations

import json
import time
from typing import Any


from relay_repl.lab.stubs.script import LastInput, Reply
from relay_repl.lab.stubs.wire import model_in_body, named_event, new_id, one_path_api, path_reason

SSE = tuple[str, dict[str, Any]]
SIDE_TEXT = "Stub task title"


def _item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content or []:
        if isinstance(part, dict) and part.get("type") in ("input_text", "text", "output_text"):
            parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def offered_tools(body: dict[str, Any]) -> list[str]:
    """The tool names Codex offered with a request, an MCP tool spelled `mcp__<server>__<tool>`.

    Codex groups an MCP server's tools in one `{"type":"namespace","name":"mcp__<server>",
    "tools":[...]}` tool (adapters/codex.md); naming them the way Claude Code does (and the way
    `tool_name` reads a script's call back) lets the converser ask one question of every stub.
    """
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            ns = str(tool.get("name") or "")
            names += [f"{ns}__{t['name']}" for t in tool["tools"] if isinstance(t, dict) and t.get("name")]
        elif tool.get("name"):
            names.append(str(tool["name"]))
    return names


def last_input(body: dict[str, Any]) -> LastInput:
    """The last input item that is a user message or a `function_call_output`, with the tools offered.

    Codex sends its AGENTS/environment context as earlier user messages in the first
    request; the typed prompt (or the queued message, or the tool output) is the last one.
    """
    items = body.get("input")
    tools = offered_tools(body)
    if isinstance(items, str):
        return LastInput(text=items, tools=tools)
    for item in reversed(items or []):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call_output":
            out = item.get("output")
            if isinstance(out, dict | list):
                out = json.dumps(out)
            return LastInput(text=str(out or ""), tool_result=True, tools=tools)
        if kind == "message" and item.get("role") == "user":
            return LastInput(text=_item_text(item).strip(), tools=tools)
    return LastInput(tools=tools)


def side_reason(method: str, path: str, body: Any) -> str | None:
    """Why a request is NOT a thread turn (None = a turn).

    Codex's title generation posts `/responses` without `tools`; anything that is not a
    POST to `/responses` is a probe.
    """
    return path_reason(method, path, body, "/responses", no_tools="no tools (title generation)")


def _arguments(reply: Reply) -> str:
    assert reply.tool is not None
    return json.dumps(dict(reply.tool.input))


def tool_name(name: str) -> tuple[str | None, str]:
    """(namespace, name) as Codex expects a call to come back.

    Codex 0.169.0 offers MCP tools grouped in a `{"type":"namespace","name":"mcp__<server>"}`
    tool, and a call to one names the namespace and the bare tool (measured in the lab).
    A script names MCP tools the way Claude Code does, `mcp__<server>__<tool>`, so one rule
    serves both stubs; other names are plain function tools.
    """
    if name.startswith("mcp__"):
        server, sep, tool = name[len("mcp__"):].partition("__")
        if sep and server and tool:
            return f"mcp__{server}", tool
    return None, name


def output_items(reply: Reply) -> list[dict[str, Any]]:
    """The finished output items: an assistant message, a function call, or both."""
    items: list[dict[str, Any]] = []
    if reply.text or reply.tool is None:
        items.append(
            {
                "type": "message",
                "id": new_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    if reply.tool is not None:
        namespace, name = tool_name(reply.tool.name)
        call: dict[str, Any] = {
            "type": "function_call",
            "id": new_id("fc"),
            "call_id": new_id("call"),
            "name": name,
            "arguments": _arguments(reply),
            "status": "completed",
        }
        if namespace:
            call["namespace"] = namespace
        items.append(call)
    return items


def stream(reply: Reply, model: str) -> tuple[list[SSE], list[SSE]]:
    """Render `reply` as (prelude, body) events in codex.md section 7's order."""
    resp_id = new_id("resp")
    created = int(time.time())
    seq = iter(range(1_000_000))

    def ev(kind: str, **fields: Any) -> SSE:
        return (kind, {"type": kind, "sequence_number": next(seq), **fields})

    def resp(status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {"id": resp_id, "object": "response", "created_at": created, "status": status, "model": model, "output": output, **extra}

    prelude = [ev("response.created", response=resp("in_progress", []))]
    body = [ev("response.in_progress", response=resp("in_progress", []))]
    items = output_items(reply)
    for idx, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            body.append(ev("response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "content": []}))
            body.append(
                ev(
                    "response.content_part.added",
                    item_id=item["id"],
                    output_index=idx,
                    content_index=0,
                    part={"type": "output_text", "text": "", "annotations": []},
                )
            )
            body.append(ev("response.output_text.delta", item_id=item["id"], output_index=idx, content_index=0, delta=text))
            body.append(ev("response.output_text.done", item_id=item["id"], output_index=idx, content_index=0, text=text))
        body.append(ev("response.output_item.done", output_index=idx, item=item))
    out_tokens = max(1, len(reply.text.split()) + (5 if reply.tool else 0))
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + out_tokens,
    }
    body.append(ev("response.completed", response=resp("completed", items, usage=usage)))
    return prelude, body


# ---- the stub API protocol (stubs/apis.py) --------------------------------------------------

BASE_PATH = "/v1"
encode, model = named_event, model_in_body  # wire.py: as Anthropic's API (named events, the model in the body)


def _whole(reply: Reply, model: str) -> Any:
    """A turn answered whole: the stream's last event's response."""
    return stream(reply, model)[1][-1][1]["response"]


# `/v1/responses` streams unless told not to (or answers whole) from the script; model listings and probes are fixed
respond = one_path_api("/responses", {"error": {"message": "stub: no {path}", "type": "not_found"}},
                       lambda body: bool(body.get("stream", True)), _whole, stream, encode, None,
                       probes={"/models": {"object": "list", "data": [], "models": []}})
