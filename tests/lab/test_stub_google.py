"""The Gemini API stub (lab/stubs/google.py): request reading, side requests, the SSE stream.

Pure functions first, then the real server over loopback, parsing the SSE as
@google/genai does (`data:` lines, no event names). The request shapes are the ones
Gemini CLI 0.61.0 sent in the lab (adapters/gemini-cli.md).
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

import relay_repl.lab.stubs.google as gemini
from relay_repl.core.envelope import Envelope
from relay_repl.lab.stubs.client import StubClient
from relay_repl.lab.stubs.converse import Converser
from relay_repl.lab.stubs.script import LastInput, Reply, Rule, Step, ToolCall
from relay_repl.lab.stubs.server import StubServer

TOOLS = [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "mcp_relay_relay_reply"}]}]
CONTEXT = "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n</session_context>"


def chat_body(*parts: dict[str, Any], tools: bool = True, history: bool = False) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    if history:
        contents += [{"role": "user", "parts": [{"text": "earlier"}]},
                     {"role": "model", "parts": [{"text": "earlier answer"}]}]
    contents.append({"role": "user", "parts": list(parts)})
    body: dict[str, Any] = {"contents": contents, "systemInstruction": {"parts": [{"text": "sys"}]},
                            "generationConfig": {"temperature": 1}}
    if tools:
        body["tools"] = TOOLS
    return body


def test_last_input_drops_the_session_context_part_of_the_first_turn():
    last = gemini.last_input(chat_body({"text": CONTEXT}, {"text": "hello there"}))
    assert last == LastInput(text="hello there", tools=["run_shell_command", "mcp_relay_relay_reply"])
    assert gemini.last_input(chat_body({"text": CONTEXT})).text.startswith("<session_context>")


def test_last_input_reads_a_function_response_as_a_tool_result():
    out = "<untrusted_context>\nOutput: hi\n</untrusted_context>"
    body = chat_body({"functionResponse": {"id": "x", "name": "run_shell_command", "response": {"output": out}}},
                     history=True)
    last = gemini.last_input(body)
    assert last.tool_result and last.text == out
    body = chat_body({"functionResponse": {"name": "t", "response": {"error": "no"}}})
    assert gemini.last_input(body).text == json.dumps({"error": "no"})


def test_side_requests_are_told_from_chat_turns():
    chat = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert gemini.side_reason("POST", chat, chat_body({"text": "hi"})) is None
    assert gemini.side_reason("POST", chat.replace("stream", "").replace(":G", ":g"), chat_body({"text": "hi"})) is None
    assert gemini.side_reason("POST", "/v1beta/models/m:generateContent", chat_body({"text": "x"}, tools=False)) == "no tools"
    assert gemini.side_reason("POST", "/v1beta/models/m:countTokens", {}) == "countTokens"
    assert gemini.side_reason("GET", "/v1beta/models", None) == "get probe"
    assert gemini.side_reason("POST", "/v1beta/other", {}) == "unknown endpoint"


def test_side_response_fills_the_json_schema_the_helper_asked_for():
    schema = {"type": "OBJECT", "properties": {
        "reasoning": {"type": "STRING"}, "next_speaker": {"type": "STRING", "enum": ["user", "model"]},
        "complexity_score": {"type": "INTEGER"}, "flags": {"type": "ARRAY"}, "ok": {"type": "BOOLEAN"}}}
    body = {"generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}
    text = gemini.side_response(body, "m")["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"reasoning": "stub", "next_speaker": "user", "complexity_score": 1,
                                "flags": [], "ok": False}
    plain = gemini.side_response({"generationConfig": {}}, "m")
    assert plain["candidates"][0]["content"]["parts"] == [{"text": gemini.SIDE_TEXT}]


def test_tool_calls_use_gemini_names_and_args():
    reply = Reply(text="", tool=ToolCall(name="mcp__relay__relay_reply", input={"relay_id": "a", "text": "b"}),
                  answered_by="t")
    prelude, body = gemini.stream(reply, "gemini-2.5-pro")
    assert prelude[0][1]["candidates"][0]["content"]["parts"] == [{"text": ""}]
    cand = body[-1][1]["candidates"][0]
    assert cand["finishReason"] == "STOP"
    assert cand["content"]["parts"] == [{"functionCall": {"name": "mcp_relay_relay_reply",
                                                          "args": {"relay_id": "a", "text": "b"}}}]
    assert gemini.tool_name("run_shell_command") == "run_shell_command"
    assert gemini.tool_name("mcp__bad") == "mcp__bad"
    assert gemini.encode(body[0]).startswith(b"data: {") and gemini.encode(body[0]).endswith(b"\r\n\r\n")


def test_converse_answers_an_envelope_with_relay_reply_through_run_shell_command():
    conv = Converser(name="gamma", api="google")
    env = Envelope.make(sender="operator:relay@host.1", to="gemini:gamma", id="r-1", hop=0, want="reply", body="hi")
    label, steps = conv.answer(env.compose()) or ("", [])
    assert label == "converse: r-1"
    assert steps[0].tool is not None and steps[0].tool.name == "run_shell_command"
    assert steps[0].tool.input["command"].startswith("relay reply r-1 ")
    assert conv.sender == "agent:gemini-cli@gamma"
    assert steps[-1] == Step(text="answered r-1 with relay reply")


# -- over the wire --------------------------------------------------------------------------

async def _sse(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.post(url, json=body) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
        raw = (await resp.read()).decode()
    return [json.loads(chunk[len("data: "):]) for chunk in raw.split("\r\n\r\n") if chunk.startswith("data: ")]


@pytest.mark.anyio
async def test_server_streams_a_scripted_turn_and_answers_helpers(stub: tuple[StubServer, StubClient]):
    _, client = stub
    info = await client.add_session("gamma", "google")
    assert info.base_url == f"http://127.0.0.1:{info.port}"
    await client.add_rule("gamma", Rule(match="RUN", steps=[
        Step(tool=ToolCall(name="run_shell_command", input={"command": "echo hi"})), Step(text="ran it")]))
    url = f"{info.base_url}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    chunks = await _sse(url, chat_body({"text": CONTEXT}, {"text": "please RUN"}))
    assert chunks[-1]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "run_shell_command"
    assert chunks[-1]["modelVersion"] == "gemini-2.5-pro"
    result = {"functionResponse": {"name": "run_shell_command", "response": {"output": "hi"}}}
    chunks = await _sse(url, chat_body(result, history=True))
    assert chunks[-1]["candidates"][0]["content"]["parts"] == [{"text": "ran it"}]
    async with aiohttp.ClientSession() as http:
        side = f"{info.base_url}/v1beta/models/gemini-3.5-flash-lite:generateContent"
        async with http.post(side, json=chat_body({"text": "x"}, tools=False)) as resp:
            assert (await resp.json())["candidates"][0]["content"]["parts"] == [{"text": gemini.SIDE_TEXT}]
        async with http.post(f"{info.base_url}/v1beta/models/m:countTokens", json={}) as resp:
            assert await resp.json() == {"totalTokens": 10}
    recs = await client.requests("gamma")
    assert [r.kind for r in recs] == ["main", "main", "side", "side"]
    assert recs[0].last_text == "please RUN" and recs[1].tool_result
