"""Anthropic Messages API, as much of it as Claude Code 2.1.328 needs from a stub.

Pure functions: read what the client last said, tell the main conversation from Claude's
side requests, and render a `Reply` as the SSE events of `POST /v1/messages`. The server
writes `prelude` events, holds, then writes `body` events, so a hold happens after the
stream has visibly started (Claude shows its spinner) and never before the headers.
"""

from __future__ import annotations

import json
import re
from typing import Any


from relay_repl.lab.stubs.script import LastInput, Reply
from relay_repl.lab.stubs.wire import model_in_body, named_event, new_id, one_path_api, path_reason

SSE = tuple[str, dict[str, Any]]
PING: SSE = ("ping", {"type": "ping"})
REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
SIDE_TEXT = "stub side reply"


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "tool_result":
        return _content_text(block.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_block_text(b) for b in content) if t)
    return ""


def last_input(body: dict[str, Any]) -> LastInput:
    """The last `role:"user"` message, and the `system`-role notes Claude appended after it
    (`notes`: a peer message that arrived while the turn ran is one).

    Text blocks are joined; `<system-reminder>` blocks are dropped unless nothing else is
    left, so a rule sees what the human (or the peer) said, not Claude's reminders. A
    message carrying a `tool_result` block counts as a tool result.
    """
    notes: list[str] = []
    for msg in reversed(body.get("messages") or []):
        if not isinstance(msg, dict) or msg.get("role") != "user":
            if isinstance(msg, dict) and msg.get("role") == "system":
                notes.insert(0, REMINDER_RE.sub("", _content_text(msg.get("content"))).strip())
            continue
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [content]
        is_tool = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
        raw = _content_text(content)
        clean = REMINDER_RE.sub("", raw).strip()
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name")]
        return LastInput(text=clean or raw.strip(), tool_result=is_tool, tools=tools,
                         notes="\n".join(n for n in notes if n))
    return LastInput()


def side_reason(method: str, path: str, body: Any) -> str | None:
    """Why a request is NOT the main conversation (None = main).

    Measured on 2.1.328 offline: the main loop always posts `/v1/messages` with a
    non-empty `tools` list; its helpers (title/topic detection on the small model,
    quota probes, token counting) and connectivity probes do not.
    """
    return path_reason(method, path, body, "/v1/messages", counts="count_tokens")


def _usage(out_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": out_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    """The content blocks of the finished message, each with a stable id."""
    blocks: list[dict[str, Any]] = []
    if reply.text or reply.tool is None:
        blocks.append({"type": "text", "text": reply.text})
    if reply.tool is not None:
        blocks.append(
            {"type": "tool_use", "id": new_id("toolu"), "name": reply.tool.name, "input": reply.tool.input}
        )
    return blocks


def _tokens(reply: Reply) -> int:
    return max(1, len(reply.text.split()) + (5 if reply.tool else 0))


def stream(reply: Reply, model: str) -> tuple[list[SSE], list[SSE]]:
    """Render `reply` as (prelude, body) SSE events; the server holds between the two."""
    msg_id = new_id("msg")
    stop = "tool_use" if reply.tool is not None else "end_turn"
    prelude: list[SSE] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(1),
                },
            },
        ),
        PING,
    ]
    body: list[SSE] = []
    for i, block in enumerate(_blocks(reply)):
        if block["type"] == "text":
            body.append(
                ("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            )
            for chunk in _chunks(block["text"]):
                body.append(
                    ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": chunk}})
                )
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            body.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
            body.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                )
            )
        body.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    body.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": _tokens(reply)}},
        )
    )
    body.append(("message_stop", {"type": "message_stop"}))
    return prelude, body


def message(reply: Reply, model: str) -> dict[str, Any]:
    """The same reply as a non-streaming Messages API response (`stream` false)."""
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(reply),
        "stop_reason": "tool_use" if reply.tool is not None else "end_turn",
        "stop_sequence": None,
        "usage": _usage(_tokens(reply)),
    }


def _chunks(text: str, size: int = 40) -> list[str]:
    """Split text into a few deltas, as a real stream would; an empty text is one empty delta."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# ---- the stub API protocol (stubs/apis.py) --------------------------------------------------

BASE_PATH = ""
# wire.py: the SSE framing and the model's place (the body) this API shares with the other named-event one
encode, model = named_event, model_in_body
respond = one_path_api(  # `/v1/messages` streams (or answers whole) from the script; counts and probes are fixed
    "/v1/messages", {"type": "error", "error": {"type": "not_found_error", "message": "stub: no {path}"}},
    lambda body: bool(body.get("stream")), message, stream, encode, encode(PING),
    posts={"/count_tokens": {"input_tokens": 10}},
)
