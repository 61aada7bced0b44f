"""Live: reply routes that work where real agents run (issue 12, item 7).

A lab of its own whose Codex runs under the `workspace-write` sandbox (Codex's default),
where `relay reply` cannot reach the operator's inbox socket. Both other routes must work
there: the turn reply (read from the rollout) and relay_reply on the relay MCP server
(which Codex starts outside its sandbox). Plus a Claude turn reply.
"""

from __future__ import annotations

import os

import anyio
import pytest

import relay_repl.agents.codex.lab as codex_lab
from relay_repl.core.envelope import Envelope
from relay_repl.lab.stubs.client import StubClient
from relay_repl.lab.stubs.script import Rule, Step, ToolCall
from relay_repl.testing.labs import private_lab_home
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.fixture(scope="module")
def lab_home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("RELAY_LAB_CODEX_SANDBOX", "workspace-write")
    try:
        with private_lab_home(tmp_path_factory, "routes-lab") as home:
            yield home
    finally:
        mp.undo()


def sandbox_of(lab) -> str:
    import tomllib

    from relay_repl.lab.launcher import layout

    return tomllib.loads((codex_lab.home(layout().root) / "config.toml").read_text())["sandbox_mode"]


async def wait_for(pred, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while not pred():
            await anyio.sleep(0.1)
        return True
    return False


async def test_codex_under_workspace_write_answers_by_turn_reply(lab):
    assert sandbox_of(lab) == "workspace-write"
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.add_rule("beta", Rule(match=rid, once=True, steps=[Step(text="beta: the suite passes")]))
        d = await s.send("codex:beta", "did the suite pass?", want="reply", reply_via="turn", timeout=30)
        assert d.relay_id == rid and d.outcome == "delivered", d.summary()
        assert d.plan is not None and d.plan.reply_route and d.plan.reply_route.startswith("turn reply: ")
        assert "receiver's own record" in d.plan.reply_route and "Reply via" not in d.plan.reply_route
        answer = await d.wait_reply(30)
        assert answer is not None and answer.body == "beta: the suite passes" and answer.answers == rid
        assert d.state.value == "replied" and d.reply == answer
        assert answer.verdict is not None and answer.verdict.verdict == "receiver's own record"
        assert answer.verdict.session == "codex:beta" and "task_complete" in answer.verdict.detail
        assert answer.origin["anchor"].startswith("client_id ") and answer.origin["source"].endswith(".jsonl")
        assert [m.seq for m in s.inbox if m.answers == rid] == [answer.seq]  # kept in the inbox too
        assert [e.data["text"] for e in s.why(rid) if e.kind == "turn-reply"] == ["beta: the suite passes"]
        # the lower-level call reads the same record
        r = await s.turn_reply(d, timeout=5)
        assert r is not None and r.text == "beta: the suite passes" and r.provenance == "receiver's own record"


async def test_the_plan_for_a_sandboxed_codex_names_the_relay_mcp_server(lab):
    async with live_session([]) as (s, gate, inbox):
        plan = await s.preview("codex:beta", "hi", want="reply")
        assert plan.reply_route and "relay_reply" in plan.reply_route and "relay MCP server" in plan.reply_route
        assert "[mcp_servers.relay]" in plan.reply_route
        d = await s.send("codex:beta", "hi", want="reply")  # the gate answers No: nothing is sent
        assert d.state.value == "withheld" and d.plan is not None and d.plan.reply_route == plan.reply_route.replace(
            plan.relay_id or "", d.relay_id or "")


async def test_codex_under_workspace_write_cannot_run_relay_reply_but_mcp_relay_reply_works(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True]) as (s, gate, inbox):
        # control: the sandbox really refuses `relay reply` (a unix-socket connect)
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.tool_call("beta", "exec_command", {"cmd": f"relay reply {rid} via-shell"}, then_text="tried",
                             match=rid)
        d = await s.send("codex:beta", "answer by shell", want="reply", transport="codex-queue", timeout=30)
        tried = await s.turn_reply(d, timeout=30)
        assert tried is not None and tried.text == "tried"
        reqs = await stub.requests("beta", kind="main")
        shell_out = str(reqs[-1].body.get("input", [])[-1])
        # inside the sandbox `relay reply` finds no live inbox (the REPL's pid is outside its pid namespace;
        # the socket connect would be refused anyway): it exits 1 and nothing reaches the inbox
        assert "Process exited with code 1" in shell_out and "relay_reply" in shell_out, shell_out
        assert not inbox.received

        # the MCP route (what relay picks for a sandboxed Codex with the relay MCP server configured)
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.tool_call("beta", "mcp__relay__relay_reply", {"relay_id": rid, "text": "beta via mcp"},
                             then_text="sent it", match=rid)
        d = await s.send("codex:beta", "answer by mcp", want="reply", transport="codex-queue", timeout=30)
        assert d.outcome == "delivered", d.summary()
        assert d.extra.reply_via == "mcp" and "relay MCP server" in (d.plan.reply_route or "")
        answer = await d.wait_reply(30)
        assert answer is not None, f"no reply reached the inbox through relay_reply: {d.summary()} {inbox.received}"
        env = Envelope.parse(answer.line)
        assert env is not None and env.body == "beta via mcp" and env.hop == 1 and env.re == rid
        assert env.sender == "agent:codex@beta" and answer.answers == rid and d.state.value == "replied"
        assert answer.verdict is not None and answer.verdict.verdict == "verified", answer.verdict
        # the connecting process is `relay mcp`, started by the Codex host that holds beta's thread
        from relay_repl.system.proc import ancestors, read_cmdline

        pid = answer.origin["verifiedPeerPid"]
        beta = await s.target("codex:beta")
        assert pid != os.getpid() and "mcp" in (read_cmdline(pid) or [])
        assert beta.pid in ancestors(pid), (pid, beta.pid, ancestors(pid))
        turn = await s.turn_reply(d, timeout=30)
        assert turn is not None and turn.text == "sent it"


async def test_claude_turn_reply(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.add_rule("alpha", Rule(match=rid, once=True, steps=[
            Step(text="checking", tool=ToolCall(name="Bash", input={"command": "true", "description": "check"})),
            Step(text="alpha: all good")]))
        d = await s.send("claude:alpha", "all good?", want="reply", reply_via="turn", transport="claude-code-socket",
                         timeout=30)
        assert d.outcome == "delivered", d.summary()
        assert d.plan is not None and (d.plan.reply_route or "").startswith("turn reply: ")
        answer = await d.wait_reply(30)
        assert answer is not None and answer.body == "alpha: all good" and d.state.value == "replied"
        assert answer.verdict is not None and answer.verdict.verdict == "receiver's own record"
        assert answer.origin["anchor"] == f"msg_id {d.extra.msg_id}" and ".origin" in answer.origin["record"]


async def test_claude_answers_by_mcp_relay_reply_verified(lab):
    """Claude 2.1.328 lists MCP tools as deferred: the model loads relay_reply with ToolSearch first."""
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.add_rule("alpha", Rule(match=rid, once=True, steps=[
            Step(tool=ToolCall(name="ToolSearch", input={"query": "select:mcp__relay__relay_reply", "max_results": 1})),
            Step(tool=ToolCall(name="mcp__relay__relay_reply", input={"relay_id": rid, "text": "alpha via mcp"})),
            Step(text="done")]))
        d = await s.send("claude:alpha", "answer by mcp", want="reply", reply_via="mcp", transport="claude-code-socket",
                         timeout=30)
        assert "relay MCP server" in (d.plan.reply_route or "") and d.outcome == "delivered", d.summary()
        answer = await d.wait_reply(30)
        assert answer is not None and answer.body == "alpha via mcp" and d.state.value == "replied"
        alpha = await s.target("claude:alpha")
        assert answer.verdict is not None and answer.verdict.verdict == "verified"
        assert answer.verdict.session == "claude:alpha" and answer.verdict.session_pid == alpha.pid
        assert answer.verdict.pid != alpha.pid  # the MCP server connected, started by alpha


async def test_claude_without_a_listed_inbox_falls_back_to_the_relay_mcp_server(lab):
    """No inbox listed as a peer: listing it is offered first (the native route); declined, the
    plan names the route alpha's configuration still allows (the lab gives it the relay MCP
    server) instead of refusing. The gate then answers No: nothing is sent."""
    async with live_session([False, False]) as (s, gate, inbox):
        d = await s.send("claude:alpha", "fallback?", want="reply", transport="claude-code-socket", timeout=30)
        assert gate.shown[0].action.startswith("list the operator inbox")  # offered first, declined
        assert d.state.value == "withheld" and d.extra.reply_via == "mcp"
        assert d.plan is not None and "relay MCP server" in (d.plan.reply_route or "")
        assert "--mcp-config" in (d.plan.reply_route or "")


def test_one_liner_gets_a_turn_reply_from_sandboxed_codex(lab):
    """`relay send codex:beta ... --want reply --reply-via turn --wait 30` from a shell: the plan
    names the turn reply, the agent's final message is printed, exit 0."""
    import shlex
    import sys

    from relay_repl.lab.stubs.client import SyncStubClient
    from tests.support.tmuxdrive import Screen

    SyncStubClient(lab.stub.control).add_rule(
        "beta", {"match": "one-liner turn", "once": True, "steps": [{"text": "beta says: one-liner ok"}]})
    cmd = shlex.join([sys.executable, "-m", "relay_repl", "send", "codex:beta", "one-liner turn", "--want", "reply",
                      "--reply-via", "turn", "--wait", "30"]) + " 2>&1; echo RC=$?; sleep 600"
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))
    try:
        screen.wait_for(lambda t: "Proceed? [y/N]" in t, timeout=60)
        screen.keys("y", "Enter")
        text = screen.wait_for("RC=", timeout=90)
    finally:
        screen.close()
    assert int(text.split("RC=")[-1].split()[0]) == 0, text
    assert "turn reply:" in text and "beta says: one-liner ok" in text, text
