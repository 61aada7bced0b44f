"""JSON-RPC 2.0 messages, one per line: decode what a peer wrote, encode what we answer.

Why here and by hand: `relay mcp` speaks MCP over stdio, which is exactly this (newline-delimited
JSON-RPC 2.0 objects), and it must answer `initialize` in a few tens of milliseconds on a busy
machine (session/mcp/mcp_server.py says why). Pure values and the standard library only: no I/O, no
pydantic; the stdio loop is system/stdio_rpc.py.

Rules kept (JSON-RPC 2.0, section 5): a line that is not JSON -> -32700 with id null; JSON that is
not a request object (a batch, a missing method, a bad id) -> -32600, with the id when one could be
read; a notification (no id) never gets an answer, whatever its method; a message with `result` or
`error` and no `method` is a response to us and is ignored (we send no requests).
"""

from __future__ import annotations

import json
from typing import Any

from relay_repl.core.errors import JsonRpcError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

MAX_LINE = 4 * 1024 * 1024
"""The longest line read as a message (a relay_reply's text is at most a relay line, 4,000
characters): a longer one is answered with an error and not parsed."""

_NO_ID = object()  # a notification: distinct from an explicit `"id": null`


class Request:
    """One request or notification: `id` is None-able, `is_notification` says whether one was sent."""

    __slots__ = ("method", "params", "id", "is_notification")

    def __init__(self, method: str, params: Any, id: Any, is_notification: bool) -> None:
        self.method = method
        self.params = params
        self.id = id
        self.is_notification = is_notification


def decode(line: bytes | str) -> Request | dict[str, Any] | None:
    """A Request, or the error response to send back, or None (a blank line or a response to us)."""
    if len(line) > MAX_LINE:  # the size check comes before any scan of the text
        return error_response(None, INVALID_REQUEST, f"Invalid Request: the line is over the {MAX_LINE:,} bytes "
                              "this server reads")
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            return error_response(None, PARSE_ERROR, "Parse error: the line is not UTF-8")
    if not line.strip():
        return None
    try:
        msg = json.loads(line)
    except ValueError as exc:
        return error_response(None, PARSE_ERROR, f"Parse error: {exc}")
    except RecursionError:  # `[[[[...` 100,000 deep: the decoder's recursion, not the process, ends
        return error_response(None, PARSE_ERROR, "Parse error: nested too deeply")
    if isinstance(msg, list):
        return error_response(None, INVALID_REQUEST, "Invalid Request: batches are not supported (MCP since 2025-06-18)")
    if not isinstance(msg, dict):
        return error_response(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC object")
    mid = msg.get("id", _NO_ID)
    id_ok = mid is _NO_ID or mid is None or (isinstance(mid, (str, int)) and not isinstance(mid, bool))
    echo = mid if id_ok and mid is not _NO_ID else None
    if "method" not in msg and ("result" in msg or "error" in msg):
        return None  # a response to a request of ours: we send none, nothing waits for it
    if msg.get("jsonrpc") != "2.0":
        return error_response(echo, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not id_ok:
        return error_response(None, INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
    method = msg.get("method")
    if not isinstance(method, str):
        return error_response(echo, INVALID_REQUEST, "Invalid Request: method must be a string")
    params = msg.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        if mid is _NO_ID:
            return None
        return error_response(echo, INVALID_PARAMS, "Invalid params: params must be an object or an array")
    return Request(method, params, None if mid is _NO_ID else mid, mid is _NO_ID)


def result_response(id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": err}


def from_error(id: Any, exc: JsonRpcError) -> dict[str, Any]:
    return error_response(id, exc.code, str(exc), exc.data)


def encode(msg: dict[str, Any]) -> bytes:
    """One compact line, UTF-8 (non-ASCII kept as is: MCP stdio messages are UTF-8 and a line
    must hold no raw newline, which json.dumps never writes). A lone surrogate (a client's id or
    method written as `"\\ud800"`, echoed back) has no UTF-8 form: that line is written with
    JSON's own `\\uXXXX` escapes instead, which every JSON reader takes back to the same string."""
    try:
        return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(msg, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
