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

from relay_repl.core.envelope import Envelope
from relay_repl.lab.stubs.client import StubClient
from relay_repl.lab.stubs.script import Rule, Step, ToolCall
from tests.support.labs import private_lab_home
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

    return tomllib.loads((layout().codex_home / "config.toml").read_text())["sandbox_mode"]


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
        d = await s.send("codex:beta", "did the suite pass?", want="reply", transport="codex-queue", timeout=30)
        assert d.relay_id == rid and d.outcome == "delivered", d.summary()
        r = await s.turn_reply(d, timeout=30)
        assert r is not None and r.status == "answered" and r.text == "beta: the suite passes"
        assert r.kind == "codex" and r.anchor.startswith("client_id ") and r.provenance == "receiver's own record"
        assert "trigger queue" in r.record and r.source.endswith(".jsonl")
        assert [e.data["text"] for e in s.why(rid) if e.kind == "turn-reply"] == ["beta: the suite passes"]


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

        # the MCP route: Codex starts `relay mcp` outside its sandbox
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.tool_call("beta", "mcp__relay__relay_reply", {"relay_id": rid, "text": "beta via mcp"},
                             then_text="sent it", match=rid)
        d = await s.send("codex:beta", "answer by mcp", want="reply", transport="codex-queue", timeout=30)
        assert d.outcome == "delivered", d.summary()
        assert await wait_for(lambda: inbox.received, 30), "no reply reached the inbox through relay_reply"
        msg = inbox.received[0]
        env = Envelope.parse(msg.line)
        assert env is not None and env.body == "beta via mcp" and env.hop == 1
        assert env.sender == "agent:codex@beta"
        # the connecting process is `relay mcp`, started by the Codex host that holds beta's thread
        from relay_repl.system.proc import ancestors, read_cmdline

        pid = msg.origin["verifiedPeerPid"]
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
        d = await s.send("claude:alpha", "all good?", want="reply", transport="claude-code-socket", timeout=30)
        assert d.outcome == "delivered", d.summary()
        r = await s.turn_reply(d, timeout=30)
        assert r is not None and r.status == "answered" and r.text == "alpha: all good"
        assert r.kind == "claude-code" and r.anchor == f"msg_id {d.extra['msg_id']}" and ".origin" in r.record
