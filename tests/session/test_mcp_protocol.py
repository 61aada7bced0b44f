"""`relay mcp` as a JSON-RPC 2.0 / MCP stdio peer: the real console script over pipes, line by line.

What a client may send and what it must get back: every method the server offers, malformed
lines, an unknown method, invalid params, a tool's refusal, notifications (never answered), and
that nothing heavy (pydantic, the MCP SDK) is imported before the first tool call.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from relay_repl import __version__
from relay_repl.core.mcp_names import MCP_TOOL
from relay_repl.session.mcp.mcp_server import SEND_TOOL, STATUS_TOOL, INSTRUCTIONS, LATEST_PROTOCOL_VERSION, REQUESTS_TOOL
from relay_repl.store.ledger import Ledger
from tests.support.mcp_pipe import WAIT, McpPipe, init_params

def test_initialize_negotiates_the_version_and_names_the_tools_capability(mcp):
    got = mcp.ask(1, "initialize", init_params("2025-06-18"))
    assert got["jsonrpc"] == "2.0" and got["id"] == 1 and "error" not in got
    res = got["result"]
    assert res["protocolVersion"] == "2025-06-18"  # one we speak: echoed
    assert res["capabilities"] == {"tools": {}}
    assert res["serverInfo"] == {"name": "relay", "version": __version__}
    assert res["instructions"] == INSTRUCTIONS
    for version in ("2024-11-05", "2025-03-26", "2025-11-25"):
        assert mcp.ask(f"v{version}", "initialize", init_params(version))["result"]["protocolVersion"] == version
    # one we do not speak (older, or newer than ours): our latest, the client decides
    assert mcp.ask(2, "initialize", init_params("1999-01-01"))["result"]["protocolVersion"] == LATEST_PROTOCOL_VERSION
    assert mcp.ask(3, "initialize", init_params("2099-01-01"))["result"]["protocolVersion"] == LATEST_PROTOCOL_VERSION
    assert mcp.close() == 0


def test_notifications_get_no_answer_and_ping_answers_empty(mcp):
    mcp.ask(1, "initialize", init_params())
    mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    mcp.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    mcp.send({"jsonrpc": "2.0", "method": "notifications/no-such-thing", "params": {"x": 1}})
    mcp.send({"jsonrpc": "2.0", "method": "tools/list"})  # a known method sent as a notification: no answer either
    # answers come in order on the reading thread: the next line is the ping's, so none of the above answered
    assert mcp.ask("p-1", "ping") == {"jsonrpc": "2.0", "id": "p-1", "result": {}}
    assert mcp.close() == 0
    assert mcp.lines.get(timeout=WAIT) == b""  # and nothing after it


def test_tools_list_publishes_the_tools_with_their_input_schemas(mcp):
    mcp.ask(1, "initialize", init_params())
    tools = mcp.ask(2, "tools/list", {})["result"]["tools"]
    assert [t["name"] for t in tools] == [MCP_TOOL, REQUESTS_TOOL, SEND_TOOL, STATUS_TOOL]
    reply, requests, send, status = tools
    assert send["inputSchema"] == {
        "properties": {"to": {"title": "To", "type": "string"}, "body": {"title": "Body", "type": "string"},
                       "want": {"title": "Want", "type": "string", "enum": ["reply", "ack", "none"], "default": "reply"}},
        "required": ["to", "body"], "type": "object", "title": "relay_sendArguments"}
    assert status["inputSchema"]["required"] == ["request"]
    assert "held for the operator's approval" in send["description"] and "Nothing is sent by this call" in send["description"]
    assert reply["inputSchema"] == {
        "properties": {"relay_id": {"title": "Relay Id", "type": "string"}, "text": {"title": "Text", "type": "string"}},
        "required": ["relay_id", "text"], "type": "object", "title": "relay_replyArguments"}
    assert requests["inputSchema"] == {"properties": {}, "type": "object", "title": "relay_requestsArguments"}
    assert "one-line answer" in reply["description"] and "read-only" in requests["description"]
    assert mcp.ask(3, "tools/list")["result"]["tools"] == tools  # params may be left out
    assert mcp.close() == 0


def test_malformed_lines_get_json_rpc_errors_and_the_server_goes_on(mcp):
    mcp.send("{not json")
    got = mcp.recv()
    assert got["jsonrpc"] == "2.0" and got["id"] is None and got["error"]["code"] == -32700
    assert got["error"]["message"].startswith("Parse error")
    mcp.send("[1, 2]")  # a batch: not MCP since 2025-06-18
    got = mcp.recv()
    assert got["id"] is None and got["error"]["code"] == -32600
    mcp.send('"just a string"')
    assert mcp.recv()["error"]["code"] == -32600
    mcp.send({"jsonrpc": "2.0", "id": 7})  # no method
    got = mcp.recv()
    assert got["id"] == 7 and got["error"]["code"] == -32600
    mcp.send({"jsonrpc": "1.0", "id": 8, "method": "ping"})
    assert mcp.recv()["error"]["code"] == -32600
    mcp.send({"jsonrpc": "2.0", "id": {"an": "object"}, "method": "ping"})  # an id must be a string or number
    got = mcp.recv()
    assert got["id"] is None and got["error"]["code"] == -32600
    assert mcp.proc.stdin is not None
    mcp.proc.stdin.write(b"\xff\xfe{}\n")  # not UTF-8
    mcp.proc.stdin.flush()
    assert mcp.recv()["error"]["code"] == -32700
    mcp.send("")  # a blank line: nothing to answer
    mcp.send({"jsonrpc": "2.0", "id": 99, "result": {}})  # a response to us: we asked nothing, no answer
    assert mcp.ask(9, "ping") == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert mcp.close() == 0


def test_unknown_method_and_invalid_params(mcp):
    got = mcp.ask(1, "resources/list")  # not offered (capabilities name tools only)
    assert got["error"]["code"] == -32601 and got["id"] == 1
    # Claude Code's version probe (the 2026-07-28 era) comes before initialize: an error at once means
    # "legacy, go on with initialize" (adapters/claude-code.md); a probe left unanswered costs it seconds
    got = mcp.ask(0, "server/discover", {"_meta": {}})
    assert got["error"]["code"] == -32601 and got["id"] == 0
    assert mcp.ask(2, "no/such/method", {})["error"] == {"code": -32601, "message": "Method not found",
                                                           "data": "no/such/method"}
    assert mcp.ask(3, "initialize", {})["error"]["code"] == -32602  # no protocolVersion
    assert mcp.ask(4, "initialize", {"protocolVersion": 20250618})["error"]["code"] == -32602
    mcp.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": "relay_reply"})  # params not structured
    assert mcp.recv()["error"]["code"] == -32602
    assert mcp.ask(6, "tools/call", {"arguments": {}})["error"]["code"] == -32602  # no tool name
    got = mcp.ask(7, "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert got["error"] == {"code": -32602, "message": "Unknown tool: no_such_tool"}
    got = mcp.ask(8, "tools/call", {"name": MCP_TOOL, "arguments": ["op-1", "hi"]})
    assert got["error"]["code"] == -32602
    assert mcp.close() == 0


def test_a_tool_that_refuses_answers_is_error_with_one_line(mcp):
    mcp.ask(1, "initialize", init_params())
    got = mcp.ask(2, "tools/call", {"name": MCP_TOOL, "arguments": {"relay_id": "op-99", "text": "hello"}})
    res = got["result"]
    assert res["isError"] is True and len(res["content"]) == 1 and res["content"][0]["type"] == "text"
    text = res["content"][0]["text"]
    assert text.startswith("Error executing tool relay_reply: not sent: relay id 'op-99' was not sent by the operator")
    assert "\n" not in text
    # arguments of the wrong shape are the tool's refusal too (the model can correct them), not a protocol error
    got = mcp.ask(3, "tools/call", {"name": MCP_TOOL, "arguments": {"relay_id": "op-99"}})
    assert got["result"]["isError"] is True
    assert got["result"]["content"][0]["text"] == "Error executing tool relay_reply: invalid arguments: text is required"
    got = mcp.ask(4, "tools/call", {"name": MCP_TOOL, "arguments": {"relay_id": 5, "text": "x"}})
    assert "relay_id must be a string, not int" in got["result"]["content"][0]["text"]
    # relay_requests without a session above it: a result, not an error, that says why nothing is listed
    got = mcp.ask(5, "tools/call", {"name": REQUESTS_TOOL})
    assert got["result"]["isError"] is False
    listed = json.loads(got["result"]["content"][0]["text"])
    assert listed["session"] is None and listed["requests"] == [] and "cannot be established" in listed["why"]
    assert mcp.close() == 0


def imported_modules(calls: list[dict[str, Any]]) -> list[str]:
    """Every module `relay mcp` imported over its whole life, answering initialize, tools/list and `calls`."""
    pipe = McpPipe(env={"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        pipe.ask(1, "initialize", init_params())
        pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        pipe.ask(2, "tools/list")
        for i, params in enumerate(calls):
            assert "result" in pipe.ask(10 + i, "tools/call", params)
    finally:
        assert pipe.close() == 0
    return [line.rsplit("|", 1)[-1].strip() for line in pipe.stderr_text().splitlines()
            if line.startswith("import time:")]


def test_initialize_and_tools_list_import_nothing_heavy():
    """The point of the hand-written server: no pydantic, no MCP SDK, no event loop before a tool call."""
    heavy = ("pydantic", "mcp", "anyio", "asyncio", "httpx", "starlette", "relay_repl.store", "relay_repl.agents")
    before = imported_modules([])
    assert "relay_repl.session.mcp.mcp_server" in before  # the profile is really on
    assert [m for m in before if m.split(".")[0] in heavy or m.startswith(heavy)] == []
    after = imported_modules([{"name": REQUESTS_TOOL, "arguments": {}}])
    assert "pydantic" in after and "relay_repl.session.mcp.mcp_tools" in after  # the tool call is what loads them


def test_with_the_answered_dir_set_it_records_each_method_answered_under_its_parent(tmp_path):
    """The lab's readiness evidence (system/mcp_answered.py): `relay mcp` notes, once each answer has
    been written to its client, which methods it answered, with its own pid and its parent (the client).
    Errors and notifications are not answers; without the variable nothing is written."""
    from relay_repl.system.mcp_answered import ENV, answered

    d = tmp_path / "answered"
    pipe = McpPipe(env={ENV: str(d)})
    try:
        assert pipe.ask(1, "initialize", init_params())["result"]
        # the answer line was read, so the record (written after the flush) is there or a moment away
        assert _record_within(d, "initialize", os.getpid())["pid"] == pipe.proc.pid
        assert answered(d, "tools/list") == []
        pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert pipe.ask(2, "nosuch/method")["error"]["code"] == -32601
        assert pipe.ask(3, "tools/list")["result"]["tools"]
        rec = _record_within(d, "tools/list", os.getpid())
        assert rec["methods"] == ["initialize", "tools/list"] and rec["ppid"] == os.getpid()
        assert answered(d, "tools/list", {1}) == []  # another parent's server
    finally:
        assert pipe.close() == 0
    quiet = McpPipe()
    try:
        assert quiet.ask(1, "initialize", init_params())["result"]
    finally:
        assert quiet.close() == 0
    assert sorted(p.name for p in d.iterdir()) == [f"{pipe.proc.pid}.json"]


def _record_within(d: Path, method: str, parent: int) -> dict[str, Any]:
    """The record of `method` under `parent`, waited for (bounded: WAIT)."""
    import time

    from relay_repl.system.mcp_answered import answered

    deadline = time.monotonic() + WAIT
    while not (found := answered(d, method, {parent})):
        assert time.monotonic() < deadline, f"no record of {method} in {d}: {list(d.glob('*'))}"
        time.sleep(0.02)
    return found[-1]


def test_relay_send_refuses_at_once_when_the_caller_is_not_established(relay_home, tmp_path):
    """No agent session started this server (its client homes are empty): relay_send answers a tool
    error in one line, `not held`, and nothing is written to the ledger or any inbox."""
    empty = {"CLAUDE_CONFIG_DIR": str(tmp_path / "c"), "CODEX_HOME": str(tmp_path / "x"),
             "GEMINI_CLI_HOME": str(tmp_path / "g")}
    mcp = McpPipe(env=empty)
    mcp.ask(1, "initialize", init_params())
    got = mcp.ask(2, "tools/call", {"name": SEND_TOOL, "arguments": {"to": "claude:alpha", "body": "hi"}})["result"]
    text = got["content"][0]["text"]
    assert got["isError"] is True and text.startswith("Error executing tool relay_send: not held: relay cannot "
                                                      "establish which session is asking"), text
    assert "\n" not in text
    bad = mcp.ask(3, "tools/call", {"name": SEND_TOOL, "arguments": {"to": "claude:alpha", "body": "hi",
                                                                     "want": "maybe"}})["result"]
    assert bad["isError"] is True and "want must be one of reply, ack, none" in bad["content"][0]["text"]
    st = mcp.ask(4, "tools/call", {"name": STATUS_TOOL, "arguments": {"request": "beta-1"}})["result"]
    assert st["isError"] is True and "shown to its asker only" in st["content"][0]["text"]
    assert mcp.close() == 0
    assert not (relay_home / "ledger.sqlite").exists() or not any(
        e.kind.startswith("request") for e in Ledger(relay_home / "ledger.sqlite").events())
