"""The stub server over real sockets: control API on a UNIX socket, sessions on loopback TCP.

No mocks: each test starts a `StubServer` in-process (or the real `python -m` process),
talks to it with the real control client, and reads the model streams over HTTP the way
the CLIs do, parsing SSE from the wire.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from libtmux.test.retry import retry_until

from relay_repl.core.errors import LabError
from relay_repl.lab.stubs.client import StubClient, SyncStubClient
from relay_repl.lab.stubs.script import Rule, Step, ToolCall
from relay_repl.lab.stubs.server import StubServer

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


CLAUDE_TOOLS = [{"name": "Bash"}, {"name": "ToolSearch"}, {"name": "ListAgents"}]


def claude_body(text: str | None = None, tool_result: str | None = None, tools: bool = True) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if tool_result is not None:
        content.append({"type": "tool_result", "tool_use_id": "toolu_x", "content": tool_result})
    if text is not None:
        content.append({"type": "text", "text": text})
    body: dict[str, Any] = {
        "model": "claude-opus-5-5",
        "stream": True,
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": content}, {"role": "system", "content": "env notes"}],
    }
    if tools:
        body["tools"] = CLAUDE_TOOLS
    return body


def codex_body(text: str | None = None, output: str | None = None, tools: bool = True) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context/>"}]}
    ]
    if text is not None:
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    if output is not None:
        items.append({"type": "function_call_output", "call_id": "call_1", "output": output})
    body: dict[str, Any] = {"model": "fake-model", "stream": True, "input": items}
    if tools:
        body["tools"] = [{"type": "function", "name": "exec_command"}]
    return body


async def sse(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """POST and parse the whole SSE stream from the wire: [(event, data)]."""
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json=body, headers=headers or {}) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            raw = (await resp.read()).decode()
    events = []
    for chunk in raw.split("\n\n"):
        if not chunk.strip():
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def names(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [n for n, _ in events]


# --- sessions and control API -----------------------------------------------------------------


async def test_sessions_get_their_own_ports_and_base_urls(stub: tuple[StubServer, StubClient]) -> None:
    _, c = stub
    a = await c.add_session("alpha", "anthropic")
    o = await c.add_session("cx", "openai")
    assert a.port != o.port and a.port > 0 and o.port > 0
    assert a.base_url == f"http://127.0.0.1:{a.port}"
    assert o.base_url == f"http://127.0.0.1:{o.port}/v1"
    assert {s.name for s in await c.list_sessions()} == {"alpha", "cx"}
    with pytest.raises(LabError, match="already exists"):
        await c.add_session("alpha", "openai")
    with pytest.raises(LabError, match="invalid api"):
        await c.add_session("x", "cohere")
    await c.remove_session("cx")
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as http:
            await http.post(o.base_url + "/responses", json={})
    with pytest.raises(LabError, match="no stub session 'cx'"):
        await c.requests("cx")


async def test_bad_script_and_missing_socket_are_one_line_lab_errors(stub: tuple[StubServer, StubClient], sockdir: Path) -> None:
    _, c = stub
    await c.add_session("alpha", "anthropic")
    with pytest.raises(LabError, match="valid regex"):
        await c.add_rule("alpha", {"match": "(", "steps": [{"text": "x"}]})
    with pytest.raises(LabError, match="not reachable"):
        await StubClient(sockdir / "nope.sock").health()


# --- Anthropic ---------------------------------------------------------------------------------


async def test_anthropic_default_reply_stream(stub: tuple[StubServer, StubClient]) -> None:
    _, c = stub
    s = await c.add_session("alpha", "anthropic")
    events = await sse(s.base_url + "/v1/messages?beta=true", claude_body("hello stub"), {"x-api-key": "secret"})
    assert names(events) == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0][1]["message"]["model"] == "claude-opus-5-5"
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == "ack: hello stub"
    [rec] = await c.requests("alpha")
    assert rec.kind == "main" and rec.answered_by == "default" and rec.last_text == "hello stub"
    assert rec.query == "beta=true" and rec.outcome == "ok" and rec.finished is not None
    assert "x-api-key" not in rec.headers and rec.body["model"] == "claude-opus-5-5"


async def test_anthropic_probes_and_count_tokens(stub: tuple[StubServer, StubClient]) -> None:
    _, c = stub
    s = await c.add_session("alpha", "anthropic")
    async with aiohttp.ClientSession() as http:
        async with http.head(s.base_url + "/") as r:
            assert r.status == 200
        async with http.get(s.base_url + "/") as r:
            assert r.status == 200
        async with http.post(s.base_url + "/v1/messages/count_tokens?beta=true", json=claude_body("x")) as r:
            assert await r.json() == {"input_tokens": 10}
    recs = await c.requests("alpha", body=False)
    assert [r.kind for r in recs] == ["side"] * 3 and recs[2].side_reason == "count_tokens"


async def test_each_one_path_api_answers_whole_turns_listings_and_unknown_paths_in_its_own_shape(
    stub: tuple[StubServer, StubClient],
) -> None:
    """wire.one_path_api serves Anthropic's and OpenAI's APIs: a turn asked whole (`stream` false)
    comes as one JSON answer, OpenAI's model listing is fixed, and an unknown path or a body that is
    not a JSON object is a 404 in the API's own error shape, naming the path."""
    _, c = stub
    a = await c.add_session("alpha", "anthropic")
    o = await c.add_session("beta", "openai")
    async with aiohttp.ClientSession() as http:
        async with http.post(a.base_url + "/v1/messages", json={**claude_body("hi"), "stream": False}) as r:
            whole = await r.json()
            assert r.status == 200 and whole["type"] == "message" and whole["stop_reason"] == "end_turn"
        async with http.post(a.base_url + "/v1/nothing", json=claude_body("hi")) as r:
            assert r.status == 404 and await r.json() == {
                "type": "error", "error": {"type": "not_found_error", "message": "stub: no /v1/nothing"}}
        async with http.post(a.base_url + "/v1/messages", json=["not", "an", "object"]) as r:
            assert r.status == 404
        async with http.get(o.base_url + "/models") as r:
            assert await r.json() == {"object": "list", "data": [], "models": []}
        async with http.get(o.base_url + "/other") as r:
            assert r.status == 200 and await r.json() == {}
        async with http.post(o.base_url + "/responses", json={**codex_body("hi"), "stream": False}) as r:
            resp = await r.json()
            assert r.status == 200 and resp["status"] == "completed" and resp["output"]
        async with http.post(o.base_url + "/models", json=codex_body("hi")) as r:
            assert r.status == 404 and await r.json() == {"error": {"message": "stub: no /v1/models", "type": "not_found"}}


async def test_tool_steps_continue_across_requests_and_side_requests_do_not_consume(
    stub: tuple[StubServer, StubClient],
) -> None:
    _, c = stub
    s = await c.add_session("alpha", "anthropic")
    url = s.base_url + "/v1/messages"
    await c.send_message("alpha", "beta", "hi beta", match="PINGBETA", then_text="sent")

    ev1 = await sse(url, claude_body("PINGBETA now"))
    start = [d["content_block"] for n, d in ev1 if n == "content_block_start"]
    assert [b["type"] for b in start] == ["tool_use"] and start[0]["name"] == "ToolSearch"
    partial = "".join(d["delta"]["partial_json"] for n, d in ev1 if n == "content_block_delta")
    assert json.loads(partial) == {"query": "select:SendMessage", "max_results": 1}
    assert ev1[-2][1]["delta"]["stop_reason"] == "tool_use"

    # a side request (no tools, e.g. a title/quota helper) between steps consumes nothing
    side = await sse(url, claude_body("Generate a title", tools=False))
    assert "".join(d["delta"]["text"] for n, d in side if n == "content_block_delta") == "stub side reply"

    ev2 = await sse(url, claude_body(tool_result="Tool loaded."))
    [tool] = [d["content_block"] for n, d in ev2 if n == "content_block_start"]
    partial = "".join(d["delta"]["partial_json"] for n, d in ev2 if n == "content_block_delta")
    assert tool["name"] == "SendMessage" and json.loads(partial)["to"] == "beta"

    ev3 = await sse(url, claude_body(tool_result='{"success":true}'))
    assert ev3[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert "".join(d["delta"]["text"] for n, d in ev3 if n == "content_block_delta") == "sent"

    recs = await c.requests("alpha")
    assert [r.answered_by.split(" step ")[-1] if r.kind == "main" else "side" for r in recs] == ["1/3", "side", "2/3", "3/3"]
    assert recs[2].tool_result and recs[2].reply_tool == "SendMessage"
    assert (await c.get_script("alpha"))["rules"] == []  # once-rule used up
    assert await c.clear_requests("alpha") == 4
    assert await c.requests("alpha") == []


async def test_hold_keeps_stream_open_without_blocking_other_sessions(stub: tuple[StubServer, StubClient]) -> None:
    _, c = stub
    a = await c.add_session("alpha", "anthropic")
    b = await c.add_session("cx", "openai")
    await c.hold("alpha", 1.2, text="held reply")

    first_event_at: list[float] = []

    async def held() -> list[str]:
        got: list[str] = []
        async with aiohttp.ClientSession() as http:
            async with http.post(a.base_url + "/v1/messages", json=claude_body("hold please")) as resp:
                async for line in resp.content:
                    if line.startswith(b"event: "):
                        got.append(line[7:].decode().strip())
                        if len(got) == 1:
                            first_event_at.append(time.monotonic())
        return got

    t0 = time.monotonic()
    task = asyncio.create_task(held())
    await asyncio.sleep(0.2)
    t1 = time.monotonic()
    other = await sse(b.base_url + "/responses", codex_body("quick"))
    other_took = time.monotonic() - t1
    assert not task.done(), "the held stream finished too early"
    got = await task
    total = time.monotonic() - t0
    assert other[-1][0] == "response.completed" and other_took < 0.5
    assert first_event_at[0] - t0 < 0.5, "message_start must come before the hold"
    assert total >= 1.2
    assert got[0] == "message_start" and got[-1] == "message_stop"
    [rec] = await c.requests("alpha")
    assert rec.hold == 1.2 and rec.reply_text == "held reply"


async def test_slow_magic_and_client_abort_is_recorded(stub: tuple[StubServer, StubClient]) -> None:
    _, c = stub
    s = await c.add_session("alpha", "anthropic")
    async with aiohttp.ClientSession() as http:
        resp = await http.post(s.base_url + "/v1/messages", json=claude_body("SLOW30 then Esc"))
        await resp.content.readline()  # the stream has started: the client shows busy
        resp.close()  # what Esc does: drop the connection mid-hold
    [rec] = await c.requests("alpha", kind="main", min_count=1)
    for _ in range(40):
        if rec.outcome != "streaming":
            break
        await asyncio.sleep(0.05)
        [rec] = await c.requests("alpha")
    assert rec.hold == 30 and rec.outcome == "aborted"


async def test_release_ends_a_hold_in_progress_and_its_reply_follows_whole(stub: tuple[StubServer, StubClient]) -> None:
    """A test that made a client busy for longer than it needed ends the turn (lab.helpers.end_busy)
    instead of sitting it out: the stream completes with the whole reply, and a later hold is not
    cut short by the earlier release."""
    _, c = stub
    s = await c.add_session("cx", "openai")
    async with aiohttp.ClientSession() as http:
        async with http.post(s.base_url + "/responses", json=codex_body("SLOW60 held turn")) as resp:
            await resp.content.readline()  # the stream has started: the client shows busy
            await c.requests("cx", kind="main", min_count=1, timeout=5)
            t0 = time.monotonic()
            await c.release("cx")
            raw = (await resp.read()).decode()
            took = time.monotonic() - t0
    assert took < 5, took  # the 60 s hold ended at the release (its loop looks every TICK)
    assert "response.completed" in raw
    [rec] = await c.requests("cx", kind="main")
    assert rec.hold == 60 and rec.outcome == "ok"
    await c.hold("cx", 1.0, text="later")
    t1 = time.monotonic()
    later = await sse(s.base_url + "/responses", codex_body("after the release"))
    assert time.monotonic() - t1 >= 1.0 and later[-1][0] == "response.completed"


# --- OpenAI Responses ----------------------------------------------------------------------------


async def test_openai_turn_tool_call_then_output_and_title_side_request(stub: tuple[StubServer, StubClient]) -> None:
    _, c = stub
    s = await c.add_session("cx", "openai")
    url = s.base_url + "/responses"
    await c.tool_call("cx", "exec_command", {"cmd": "touch /tmp/x"}, then_text="touched", match="TOUCH")

    ev1 = await sse(url, codex_body("TOUCH it"))
    assert names(ev1) == ["response.created", "response.in_progress", "response.output_item.done", "response.completed"]
    item = ev1[2][1]["item"]
    assert item["type"] == "function_call" and item["name"] == "exec_command"
    assert json.loads(item["arguments"]) == {"cmd": "touch /tmp/x", "yield_time_ms": 30000}
    assert ev1[-1][1]["response"]["usage"]["total_tokens"] > 0

    title = await sse(url, codex_body("Generate a concise, single-line task title", tools=False))
    assert title[-1][1]["response"]["output"][0]["content"][0]["text"] == "Stub task title"

    ev2 = await sse(url, codex_body(output="Process exited with code 0"))
    assert names(ev2) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert ev2[4][1]["delta"] == "touched"
    recs = await c.requests("cx", body=False)
    assert [(r.kind, r.answered_by) for r in recs] == [
        ("main", "rule1 step 1/2"),
        ("side", "side: no tools (title generation)"),
        ("main", "rule1 step 2/2"),
    ]


async def test_requests_long_poll_and_default_text(stub: tuple[StubServer, StubClient]) -> None:
    _, c = stub
    s = await c.add_session("cx", "openai")
    await c.set_default("cx", "fixed answer")

    async def later() -> None:
        await asyncio.sleep(0.3)
        await sse(s.base_url + "/responses", codex_body("anything"))

    task = asyncio.create_task(later())
    t0 = time.monotonic()
    recs = await c.requests("cx", min_count=1, timeout=5)
    assert len(recs) == 1 and 0.2 < time.monotonic() - t0 < 3
    assert recs[0].reply_text == "fixed answer"
    await task
    assert len(await c.requests("cx", min_count=5, timeout=0.2)) == 1  # times out, returns what exists


# --- the real process ------------------------------------------------------------------------------


def test_process_ready_file_sync_client_and_sigterm(sockdir: Path) -> None:
    ctl, ready = sockdir / "ctl.sock", sockdir / "stubs.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "relay_repl.lab.stubs", "--control", str(ctl), "--ready-file", str(ready)],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        def ready_or_exited() -> bool:
            return ready.exists() or proc.poll() is not None

        retry_until(ready_or_exited, 10, interval=0.02, raises=False)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert ready.exists(), "no ready file"
        info = json.loads(ready.read_text())
        assert info == {"pid": proc.pid, "control": str(ctl)}
        c = SyncStubClient(ctl, timeout=5)
        s = c.add_session("alpha", "anthropic")
        c.add_rule("alpha", Rule(steps=[Step(tool=ToolCall(name="Bash", input={"command": "true"}))]))
        assert [x.name for x in c.list_sessions()] == ["alpha"]
        assert len(c.get_script("alpha")["rules"]) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
        log = proc.stderr.read() if proc.stderr else ""
        assert f"on {s.base_url}" in log and "stopped" in log
        assert not ctl.exists() and not ready.exists()
        with pytest.raises(LabError, match="not reachable"):
            c.list_sessions()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_second_server_refuses_a_live_socket(sockdir: Path) -> None:
    ctl = sockdir / "ctl.sock"
    proc = subprocess.Popen([sys.executable, "-m", "relay_repl.lab.stubs", "--control", str(ctl)], cwd=REPO,
                            stderr=subprocess.DEVNULL)
    try:
        assert retry_until(ctl.exists, 10, interval=0.02, raises=False), "no control socket"
        second = subprocess.run(
            [sys.executable, "-m", "relay_repl.lab.stubs", "--control", str(ctl)], cwd=REPO,
            capture_output=True, text=True, timeout=10,
        )
        assert second.returncode == 1 and "is live" in second.stderr
        assert SyncStubClient(ctl).health()["pid"] == proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert not os.path.exists(ctl)
