"""Pure tests of the stub's script engine and API codecs: no sockets, no clock.

Request bodies below are trimmed copies of what Claude Code 2.1.328 and Codex 0.169.0
actually sent to the stub in the live probe (bench/probe_stubs_live.py).
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

import relay_repl.lab.stubs.anthropic as anthropic
import relay_repl.lab.stubs.openai as openai
from relay_repl.lab.stubs.script import LastInput, Rule, Script, ScriptState, Step, ToolCall, ack_text, slow_seconds

# --- shapes seen live -------------------------------------------------------------------

CLAUDE_FIRST_TURN = {
    "model": "claude-opus-5-5",
    "stream": True,
    "tools": [{"name": "Bash"}, {"name": "ListAgents"}, {"name": "ToolSearch"}],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>\nAs you answer the user's questions...\n</system-reminder>"},
                {"type": "text", "text": "<system-reminder>\nAttribution for git commits...\n</system-reminder>"},
                {"type": "text", "text": "hello stub one"},
            ],
        },
        {"role": "system", "content": [{"type": "text", "text": "# Environment\nYou have been invoked..."}]},
    ],
}

CLAUDE_TOOL_RESULT = {
    "model": "claude-opus-5-5",
    "stream": True,
    "tools": [{"name": "Bash"}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "TOUCHME please"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "(Bash completed with no output)"},
                {"type": "text", "text": "<system-reminder>\nsomething\n</system-reminder>"},
            ],
        },
    ],
}

CODEX_FIRST_TURN = {
    "model": "fake-model",
    "stream": True,
    "tools": [{"type": "function", "name": "exec_command"}],
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n</environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello codex stub"}]},
    ],
}

CODEX_TOOL_RESULT = {
    "model": "fake-model",
    "stream": True,
    "tools": [{"type": "function", "name": "exec_command"}],
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "TOUCHIN now"}]},
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "Chunk ID: 5a5c1b\nProcess exited with code 0\n"},
    ],
}

CODEX_TITLE = {
    "model": "fake-model",
    "stream": True,
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Generate a concise, single-line task title"}]}],
}


# --- last user text -----------------------------------------------------------------------


def test_claude_last_user_text_skips_system_role_and_reminders() -> None:
    last = anthropic.last_input(CLAUDE_FIRST_TURN)
    assert last == LastInput(text="hello stub one", tool_result=False, tools=["Bash", "ListAgents", "ToolSearch"],
                             notes="# Environment\nYou have been invoked...")  # the system-role note, apart


def test_claude_tool_result_is_marked() -> None:
    last = anthropic.last_input(CLAUDE_TOOL_RESULT)
    assert last.tool_result and last.text == "(Bash completed with no output)"


def test_claude_string_content_and_empty() -> None:
    assert anthropic.last_input({"messages": [{"role": "user", "content": "plain"}]}).text == "plain"
    assert anthropic.last_input({"messages": []}) == LastInput()


def test_codex_last_user_message_and_function_output() -> None:
    assert openai.last_input(CODEX_FIRST_TURN) == LastInput(text="hello codex stub", tools=["exec_command"])
    last = openai.last_input(CODEX_TOOL_RESULT)
    assert last.tool_result and "Process exited with code 0" in last.text


# --- side requests ------------------------------------------------------------------------


def test_claude_side_reasons() -> None:
    assert anthropic.side_reason("POST", "/v1/messages", CLAUDE_FIRST_TURN) is None
    assert anthropic.side_reason("POST", "/v1/messages/count_tokens", CLAUDE_FIRST_TURN) == "count_tokens"
    assert anthropic.side_reason("HEAD", "/", None) == "head probe"
    no_tools = {k: v for k, v in CLAUDE_FIRST_TURN.items() if k != "tools"}
    assert anthropic.side_reason("POST", "/v1/messages", no_tools) == "no tools"


def test_codex_title_generation_is_side() -> None:
    assert openai.side_reason("POST", "/v1/responses", CODEX_FIRST_TURN) is None
    assert openai.side_reason("POST", "/v1/responses", CODEX_TITLE) is not None
    assert openai.side_reason("GET", "/v1/models", None) == "get probe"


# --- script engine --------------------------------------------------------------------------


def test_default_reply_is_ack_of_first_80_chars() -> None:
    st = ScriptState()
    text = "word " * 40
    r = st.answer(LastInput(text=text))
    assert r.answered_by == "default" and r.tool is None and r.hold == 0
    assert r.text == "ack: " + " ".join(text.split())[:80]
    st.set_default("custom")
    assert st.answer(LastInput(text="x")).text == "custom"
    st.set_default(None)
    assert st.answer(LastInput(text="x")).text == "ack: x"


def test_slow_magic_holds_unless_step_says_otherwise() -> None:
    assert slow_seconds("please SLOW8 now") == 8.0 and slow_seconds("SLOW0.5") == 0.5 and slow_seconds("slow8") == 0
    st = ScriptState()
    assert st.answer(LastInput(text="SLOW8 busy")).hold == 8.0
    st.add_rule(Rule(match="SLOW", steps=[Step(text="no wait", hold=0)]))
    assert st.answer(LastInput(text="SLOW8 busy")).hold == 0
    # a tool result never holds by magic, even if its output echoes SLOW<n>
    assert ScriptState().answer(LastInput(text="SLOW9", tool_result=True)).hold == 0


def test_rules_match_in_order_and_once_is_removed() -> None:
    st = ScriptState(Script(rules=[Rule(match="^hi", once=True, steps=[Step(text="first")]), Rule(steps=[Step(text="any")])]))
    assert st.answer(LastInput(text="hi there")).text == "first"
    assert st.answer(LastInput(text="hi there")).text == "any"
    assert len(st.rules) == 1


def test_multi_step_rule_continues_on_next_request_even_tool_results() -> None:
    st = ScriptState()
    st.add_rule(
        Rule(
            match="PING",
            once=True,
            label="ping",
            steps=[
                Step(tool=ToolCall(name="ToolSearch", input={"query": "select:SendMessage", "max_results": 1})),
                Step(tool=ToolCall(name="SendMessage", input={"to": "beta", "message": "m", "summary": "s"})),
                Step(text="sent"),
            ],
        )
    )
    r1 = st.answer(LastInput(text="PING beta"))
    assert r1.tool and r1.tool.name == "ToolSearch" and r1.text == "" and r1.answered_by == "ping step 1/3"
    pending = st.pending()
    assert pending is not None and pending.done == 1 and pending.total == 3
    r2 = st.answer(LastInput(text="Tool loaded.", tool_result=True))
    assert r2.tool and r2.tool.name == "SendMessage" and r2.answered_by == "ping step 2/3"
    r3 = st.answer(LastInput(text='{"success":true}', tool_result=True))
    assert r3.text == "sent" and r3.tool is None
    assert st.pending() is None
    assert st.answer(LastInput(text="PING again")).answered_by == "default"


def test_tool_results_never_match_rules() -> None:
    st = ScriptState(Script(rules=[Rule(steps=[Step(tool=ToolCall(name="Bash", input={"command": "true"}))])]))
    assert st.answer(LastInput(text="(Bash completed)", tool_result=True)).answered_by == "default"
    assert st.answer(LastInput(text="go")).tool is not None


def test_replace_drops_pending_and_keeps_default_unless_given() -> None:
    st = ScriptState()
    st.set_default("d1")
    st.add_rule(Rule(steps=[Step(text="a"), Step(text="b")]))
    st.answer(LastInput(text="x"))
    st.replace(Script(rules=[]))
    assert st.pending() is None and st.default == "d1"
    st.replace(Script(default="d2"))
    assert st.default == "d2"


def test_rule_validation() -> None:
    with pytest.raises(ValidationError):
        Rule(match="(", steps=[Step(text="x")])
    with pytest.raises(ValidationError):
        Rule(steps=[])
    with pytest.raises(ValidationError):
        Step(hold=-1)
    with pytest.raises(ValidationError):
        Rule.model_validate({"steps": [{"text": "x"}], "bogus": 1})
    assert ack_text("a\n b") == "ack: a b"


# --- SSE rendering --------------------------------------------------------------------------


def _names(events: list[tuple[str, dict]]) -> list[str]:
    return [n for n, _ in events]


def test_anthropic_text_stream_shape() -> None:
    from relay_repl.lab.stubs.script import Reply

    pre, body = anthropic.stream(Reply(text="hello", answered_by="t"), "m")
    assert _names(pre) == ["message_start", "ping"]
    assert _names(body) == ["content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert body[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert all(d["type"] == n for n, d in pre + body)


def test_anthropic_tool_stream_carries_input_json() -> None:
    from relay_repl.lab.stubs.script import Reply

    tool = ToolCall(name="Bash", input={"command": "touch x", "description": "d"})
    pre, body = anthropic.stream(Reply(text="running", tool=tool, answered_by="t"), "m")
    starts = [d["content_block"] for n, d in body if n == "content_block_start"]
    assert [s["type"] for s in starts] == ["text", "tool_use"]
    assert starts[1]["name"] == "Bash" and starts[1]["id"].startswith("toolu_")
    deltas = [d["delta"] for n, d in body if n == "content_block_delta" and d["index"] == 1]
    assert json.loads("".join(x["partial_json"] for x in deltas)) == tool.input
    assert body[-2][1]["delta"]["stop_reason"] == "tool_use"
    msg = anthropic.message(Reply(tool=tool, answered_by="t"), "m")
    assert msg["stop_reason"] == "tool_use" and [b["type"] for b in msg["content"]] == ["tool_use"]


def test_openai_stream_order_matches_codex_doc() -> None:
    from relay_repl.lab.stubs.script import Reply

    pre, body = openai.stream(Reply(text="hi", answered_by="t"), "fake-model")
    assert _names(pre + body) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
        "response.completed",
    ]
    usage = body[-1][1]["response"]["usage"]
    assert set(usage) == {"input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens"}
    seqs = [d["sequence_number"] for _, d in pre + body]
    assert seqs == sorted(seqs) == list(range(len(seqs)))


def test_openai_exec_command_function_call() -> None:
    from relay_repl.lab.stubs.script import Reply

    tool = ToolCall(name="exec_command", input={"cmd": "touch x"})
    _, body = openai.stream(Reply(tool=tool, answered_by="t"), "m")
    assert _names(body) == ["response.in_progress", "response.output_item.done", "response.completed"]
    item = body[1][1]["item"]
    assert item["type"] == "function_call" and item["name"] == "exec_command" and item["call_id"].startswith("call_")
    # rendered as given: what Codex's shell tool needs beside it is its lab driver's (`scripted_call`, applied by
    # the server: tests/lab/test_stub_server.py)
    assert json.loads(item["arguments"]) == {"cmd": "touch x"}


def test_openai_mcp_tool_call_names_its_namespace() -> None:
    """Codex 0.169.0 offers MCP tools inside a `namespace` tool (`mcp__relay`); a call to one
    must come back as namespace + bare name (measured in the lab: a flat
    `mcp__relay__relay_reply` name is not what Codex routes to the MCP server)."""
    from relay_repl.lab.stubs.script import Reply

    tool = ToolCall(name="mcp__relay__relay_reply", input={"relay_id": "op-1", "text": "done"})
    _, body = openai.stream(Reply(tool=tool, answered_by="t"), "m")
    item = body[1][1]["item"]
    assert item["type"] == "function_call" and item["namespace"] == "mcp__relay" and item["name"] == "relay_reply"
    assert json.loads(item["arguments"]) == {"relay_id": "op-1", "text": "done"}
    assert openai.tool_name("mcp__odd") == (None, "mcp__odd")
    assert openai.tool_name("exec_command") == (None, "exec_command")
