"""`relay mcp` survives any single line (issue 38): a nesting bomb, lone surrogates in an id or a
method name, a 10 MB line. Each gets a JSON-RPC error and the server answers the next request:
one bad client line must not end every agent's reply route."""

from __future__ import annotations

import json

import pytest

from relay_repl.core import jsonrpc
from tests.support.mcp_pipe import McpPipe, init_params


def still_answers(mcp: McpPipe, n: int) -> None:
    assert mcp.ask(f"after-{n}", "ping") == {"jsonrpc": "2.0", "id": f"after-{n}", "result": {}}


@pytest.mark.timeout(120)
def test_every_hostile_line_is_answered_with_an_error_and_the_server_goes_on(mcp):
    mcp.ask(1, "initialize", init_params())
    # 100,000 `[`: json's decoder recursed until RecursionError ended the process
    mcp.send("[" * 100_000)
    got = mcp.recv()
    assert got["id"] is None and got["error"]["code"] == jsonrpc.PARSE_ERROR, got
    still_answers(mcp, 1)
    mcp.send('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + "[" * 100_000 + "]" * 100_000 + "}}")
    assert mcp.recv()["error"]["code"] == jsonrpc.PARSE_ERROR
    still_answers(mcp, 2)
    # a lone surrogate in the id: echoing it raised UnicodeEncodeError and the process died
    mcp.send('{"jsonrpc":"2.0","id":"x\\ud800y","method":"ping"}')
    raw = mcp.lines.get(timeout=30)
    assert raw.endswith(b"\n") and raw.decode("utf-8")  # valid UTF-8 on the wire
    assert json.loads(raw) == {"jsonrpc": "2.0", "id": "x\ud800y", "result": {}}
    still_answers(mcp, 3)
    # ... and in a method name (echoed in the error's data)
    mcp.send('{"jsonrpc":"2.0","id":7,"method":"no\\udfffsuch"}')
    raw = mcp.lines.get(timeout=30)
    got = json.loads(raw.decode("utf-8"))
    assert got["id"] == 7 and got["error"]["code"] == jsonrpc.METHOD_NOT_FOUND and got["error"]["data"] == "no\udfffsuch"
    still_answers(mcp, 4)
    # 10 MB in one line: refused by its size, never parsed; the line after it is read as usual
    mcp.send('{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":"' + "x" * 10_000_000 + '"}}')
    got = mcp.recv()
    assert got["id"] is None and got["error"]["code"] == jsonrpc.INVALID_REQUEST and "over the" in got["error"]["message"]
    still_answers(mcp, 5)
    assert mcp.close() == 0
    assert "Traceback" not in mcp.stderr_text()


def test_decode_refuses_by_size_before_parsing():
    got = jsonrpc.decode(b"[" * (jsonrpc.MAX_LINE + 1))
    assert isinstance(got, dict) and got["error"]["code"] == jsonrpc.INVALID_REQUEST
    assert jsonrpc.encode({"id": "\udc80"}).decode("utf-8") == '{"id":"\\udc80"}\n'
