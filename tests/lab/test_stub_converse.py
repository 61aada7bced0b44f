"""Pure tests of the lab agents' unscripted answers to relay envelopes (stubs/converse.py)."""

from __future__ import annotations

import shlex

from relay_repl.core.envelope import Envelope
from relay_repl.lab.stubs.converse import Converser, find_envelopes, reply_body, reply_line
from relay_repl.lab.stubs.script import LastInput, Rule, Script, ScriptState, Step

OP = "operator:relay@me.host.4242"


def env_line(id_: str = "me.host.4242-1", want: str = "reply", hop: int = 0, body: str = "please summarize") -> str:
    return Envelope.make(sender=OP, to="peer", id=id_, hop=hop, want=want, body=body).compose()


def claude(peer: str | None = "relay-operator") -> ScriptState:
    return ScriptState(converser=Converser(name="alpha", api="anthropic", resolve_peer=lambda e: peer, id_base=100))


def codex() -> ScriptState:
    return ScriptState(converser=Converser(name="beta", api="openai", id_base=0))


def user(text: str) -> LastInput:
    return LastInput(text=text)


def tool_done() -> LastInput:
    return LastInput(text="ok", tool_result=True)


def header_fields(line: str) -> dict[str, str]:
    head = line[len("[relay/1 "):line.index("]")]
    return dict(tok.split("=", 1) for tok in head.split(" "))


def test_claude_answers_want_reply_with_toolsearch_then_sendmessage_to_the_listed_name() -> None:
    st = claude()
    wrapped = f"Another Claude session sent a message:\n{env_line()}\n\nThis came from another Claude session"
    first = st.answer(user(wrapped))
    assert first.tool and first.tool.name == "ToolSearch"
    assert first.tool.input["query"] == "select:SendMessage"
    second = st.answer(tool_done())
    assert second.tool and second.tool.name == "SendMessage"
    assert second.tool.input["to"] == "relay-operator"
    line = second.tool.input["message"]
    fields = header_fields(line)
    assert fields["re"] == "me.host.4242-1" and fields["id"] == "alpha-101"
    assert fields["from"] == "agent:claude-code@alpha" and fields["to"] == "operator"
    assert (fields["hop"], fields["want"]) == ("1", "none")
    assert line.endswith('reply to me.host.4242-1: received "please summarize"')
    third = st.answer(tool_done())
    assert third.tool is None and "answered me.host.4242-1 to relay-operator" in third.text
    assert st.pending() is None


def test_ack_body_and_codex_runs_relay_reply() -> None:
    st = codex()
    first = st.answer(user(env_line(want="ack")))
    assert first.tool and first.tool.name == "exec_command"
    assert shlex.split(first.tool.input["cmd"]) == ["relay", "reply", "me.host.4242-1", "ack me.host.4242-1"]
    assert "answered me.host.4242-1" in st.answer(tool_done()).text


def test_codex_answers_by_the_offered_mcp_relay_reply_not_the_shell() -> None:
    """The relay MCP server offered (Codex names it `mcp__relay` + `relay_reply`): no Python start in a shell."""
    st = codex()
    first = st.answer(LastInput(text=env_line(), tools=["exec_command", "mcp__relay__relay_requests",
                                                         "mcp__relay__relay_reply"]))
    assert first.tool and first.tool.name == "mcp__relay__relay_reply"
    assert first.tool.input == {"relay_id": "me.host.4242-1", "text": 'reply to me.host.4242-1: received "please summarize"'}
    last = st.answer(tool_done())
    assert last.tool is None and "answered me.host.4242-1 with relay_reply" in last.text and st.pending() is None


def test_codex_without_the_mcp_tool_runs_relay_reply_and_prefers_the_server_named_relay() -> None:
    from relay_repl.lab.stubs.converse import mcp_reply_tool

    first = codex().answer(LastInput(text=env_line(), tools=["exec_command", "mcp__other__relay_requests"]))
    assert first.tool and first.tool.name == "exec_command"
    assert mcp_reply_tool(["mcp__mine__relay_reply", "mcp__relay__relay_reply"]) == "mcp__relay__relay_reply"
    assert mcp_reply_tool(["mcp__mine__relay_reply"]) == "mcp__mine__relay_reply"
    assert mcp_reply_tool(["relay_reply", "exec_command"]) is None


def test_openai_last_input_names_namespaced_mcp_tools_as_claude_does() -> None:
    import relay_repl.lab.stubs.openai as openai

    body = {"tools": [{"type": "function", "name": "exec_command"},
                      {"type": "namespace", "name": "mcp__relay", "description": "relay",
                       "tools": [{"type": "function", "name": "relay_reply"}, {"type": "function", "name": "relay_requests"}]}],
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}
    assert openai.last_input(body).tools == ["exec_command", "mcp__relay__relay_reply", "mcp__relay__relay_requests"]
    assert openai.tool_name("mcp__relay__relay_reply") == ("mcp__relay", "relay_reply")  # and back


def test_codex_command_quotes_a_hostile_body() -> None:
    st = codex()
    body = "it's $(rm -rf x) `y` \"z\""
    first = st.answer(user(env_line(body=body)))
    argv = shlex.split(first.tool.input["cmd"])
    assert argv[:3] == ["relay", "reply", "me.host.4242-1"] and len(argv) == 4
    assert argv[3] == f'reply to me.host.4242-1: received "{body}"'


def test_duplicate_id_is_dropped_the_second_time() -> None:
    st = codex()
    assert st.answer(user(env_line())).tool is not None
    st.answer(tool_done())
    again = st.answer(user(env_line()))
    assert again.tool is None and "duplicate relay id me.host.4242-1" in again.text
    assert st.pending() is None


def test_relay_halt_does_nothing_and_burns_the_id() -> None:
    st = claude()
    halted = st.answer(user(env_line(body="relay-halt now")))
    assert halted.tool is None and "relay-halt" in halted.text and st.pending() is None
    assert st.answer(user(env_line(body="relay-halt now"))).tool is None


def test_want_none_hop_cap_and_plain_text_get_no_tool_call() -> None:
    st = codex()
    assert st.answer(user(env_line(want="none"))).answered_by == "default"
    capped = st.answer(user(env_line(id_="me.host.4242-9", hop=4)))
    assert capped.tool is None and "hop cap" in capped.text
    assert st.answer(user("just chatting")).text == "ack: just chatting"


def test_claude_without_a_listed_sender_says_so_and_calls_nothing() -> None:
    st = claude(peer=None)
    r = st.answer(user(env_line()))
    assert r.tool is None and "not a listed Claude Code peer" in r.text and "register_inbox" in r.text


def test_a_scripted_rule_wins_over_conversing() -> None:
    st = claude()
    st.add_rule(Rule(match="summarize", once=True, steps=[Step(text="scripted")]))
    assert st.answer(user(env_line())).text == "scripted"
    # the rule consumed it, so the converser never saw the id: a later copy is still fresh
    assert st.answer(user(env_line(id_="me.host.4242-2"))).tool is not None


def test_converse_can_be_switched_off_by_the_script() -> None:
    st = codex()
    st.replace(Script(converse=False))
    assert st.answer(user(env_line())).answered_by == "default"
    assert st.snapshot()["converse"] is False
    st.replace(Script(converse=True))
    assert st.answer(user(env_line())).tool is not None


def test_find_envelopes_skips_malformed_and_reads_each_line() -> None:
    text = f"x [relay/1 from=bad] y\n{env_line(id_='a.b.1-1')}\nmore\n{env_line(id_='a.b.1-2', want='ack')}"
    assert [e.id for e in find_envelopes(text)] == ["a.b.1-1", "a.b.1-2"]


def test_reply_line_parses_back_and_quotes_ids_safely() -> None:
    env = Envelope.parse(env_line(id_="x]y-1"))
    assert env is not None
    line = reply_line(env, sender="agent:claude-code@alpha", new_id="alpha-7")
    assert header_fields(line)["re"] == "x%5Dy-1"
    assert reply_body(env).startswith("reply to x]y-1:")


def test_claude_skips_toolsearch_once_sendmessage_is_offered() -> None:
    st = claude()
    first = st.answer(LastInput(text=env_line(), tools=["Bash", "ToolSearch", "SendMessage"]))
    assert first.tool and first.tool.name == "SendMessage"
    assert "answered" in st.answer(tool_done()).text and st.pending() is None


def test_anthropic_last_input_lists_the_offered_tools() -> None:
    import relay_repl.lab.stubs.anthropic as anthropic

    body = {"tools": [{"name": "Bash"}, {"name": "SendMessage"}], "messages": [{"role": "user", "content": "hi"}]}
    assert anthropic.last_input(body).tools == ["Bash", "SendMessage"]


def test_a_message_absorbed_while_the_turn_ran_is_answered_before_it_ends() -> None:
    """Claude appends a peer message that reached it mid-turn as a system-role note after the tool
    result ("after completing your current task, decide whether/how to respond"): the lab agent
    answers it in that turn, before the turn's closing text, instead of dropping it."""
    import relay_repl.lab.stubs.anthropic as anthropic

    tools = [{"name": "SendMessage"}]
    st = claude()
    first = st.answer(LastInput(text=env_line(), tools=["SendMessage"]))
    assert first.tool and first.tool.input["message"].endswith("me.host.4242-1: received \"please summarize\"")
    note = f"Another Claude session sent a message while you were working:\n{env_line('me.host.4242-2', body='next')}"
    body = {"tools": tools, "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sent"}]},
        {"role": "system", "content": [{"type": "text", "text": note}]}]}
    last = anthropic.last_input(body)
    assert last.tool_result and "me.host.4242-2" in last.notes and "me.host.4242-2" not in last.text
    second = st.answer(last)
    assert second.tool and second.tool.name == "SendMessage"
    assert header_fields(second.tool.input["message"])["re"] == "me.host.4242-2"
    third = st.answer(tool_done())
    assert third.tool is None and "answered me.host.4242-1" in third.text
    assert st.pending() is None
    again = st.answer(LastInput(text="sent", tool_result=True, tools=["SendMessage"], notes=note))
    assert again.tool is None  # the same note again: that id was answered, nothing more is sent


def test_a_note_absorbed_after_the_turns_last_tool_gets_its_own_closing_text() -> None:
    st = claude()
    note = f"Another Claude session sent a message while you were working:\n{env_line('me.host.4242-3')}"
    first = st.answer(LastInput(text="ran a command", tool_result=True, tools=["SendMessage"], notes=note))
    assert first.tool and first.tool.name == "SendMessage"
    closing = st.answer(tool_done())
    assert closing.tool is None and "answered me.host.4242-3" in closing.text and st.pending() is None


def gemini() -> ScriptState:
    return ScriptState(converser=Converser(name="gamma", api="google", id_base=0))


ASK = "ask claude:alpha via relay (want=reply): what is 6*7?"


def test_codex_asks_by_the_offered_mcp_relay_send_then_ends_the_turn() -> None:
    st = codex()
    first = st.answer(LastInput(text=ASK, tools=["exec_command", "mcp__relay__relay_send"]))
    assert first.tool.name == "mcp__relay__relay_send"
    assert first.tool.input == {"to": "claude:alpha", "body": "what is 6*7?", "want": "reply"}
    end = st.answer(LastInput(text='{"request": "beta-1", "state": "held"}', tool_result=True))
    assert end.tool is None and "nothing is sent until then" in end.text


def test_claude_loads_the_deferred_relay_send_then_calls_it() -> None:
    st = claude()
    first = st.answer(LastInput(text="ask codex:beta via relay: hi there", tools=["Bash", "ToolSearch"]))
    assert first.tool.name == "ToolSearch" and first.tool.input["query"] == "select:mcp__relay__relay_send"
    call = st.answer(tool_done())
    assert call.tool.name == "mcp__relay__relay_send" and call.tool.input["want"] == "reply"
    assert st.answer(tool_done()).tool is None


def test_gemini_spelling_and_the_shell_when_no_server_is_offered() -> None:
    st = gemini()
    first = st.answer(LastInput(text=ASK, tools=["run_shell_command", "mcp_relay_relay_send"]))
    assert first.tool.name == "mcp__relay__relay_send"  # the google stub renames it to mcp_relay_relay_send
    st = codex()
    shell = st.answer(LastInput(text=ASK + " $(rm -rf x)", tools=["exec_command"]))
    words = shlex.split(shell.tool.input["cmd"])
    assert words[:3] == ["relay", "ask", "claude:alpha"] and words[3] == "what is 6*7? $(rm -rf x)"
    assert words[4:] == ["--want", "reply"]


def test_status_reads_and_a_repeated_prompt_envelope_is_not_asked_twice() -> None:
    st = codex()
    got = st.answer(LastInput(text="status of relay request beta-3", tools=["mcp__relay__relay_request_status"]))
    assert got.tool.name == "mcp__relay__relay_request_status" and got.tool.input == {"request": "beta-3"}
    st = codex()
    line = env_line(want="none", body=ASK)
    assert st.answer(LastInput(text=line, tools=["mcp__relay__relay_send"])).tool is not None
    st.answer(tool_done())
    again = st.answer(LastInput(text=line, tools=["mcp__relay__relay_send"]))
    assert again.tool is None and "not asking again" in again.text
    halted = codex().answer(LastInput(text=env_line(id_="op-9", want="none", body=ASK + " relay-halt"),
                                      tools=["mcp__relay__relay_send"]))
    assert halted.tool is None, "a relay message carrying relay-halt is not acted on"
    typed = codex().answer(LastInput(text="ask claude:alpha via relay: relay-halt", tools=["mcp__relay__relay_send"]))
    assert typed.tool.input["body"] == "relay-halt", "the user's own prompt may ask relay to carry a halt"
