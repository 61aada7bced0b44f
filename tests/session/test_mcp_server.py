"""`relay mcp`, spoken to by the MCP SDK's own client over real stdio, writing into a real inbox socket.

The server is written by hand (session/mcp/mcp_server.py); the SDK (a test dependency only) is the
independent check that what it speaks is MCP as a maintained client expects it."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest

from relay_repl.core.envelope import Envelope
from relay_repl.session.core.inbox import Inbox
from relay_repl.core.mcp_names import MCP_TOOL
from relay_repl.session.mcp.mcp_server import REQUESTS_TOOL
from relay_repl.session.mcp.mcp_tools import open_requests, requests_for
from relay_repl.store.ledger import Ledger

pytestmark = pytest.mark.anyio


def sent(led: Ledger, relay_id: str, want: str, target: str = "codex:beta") -> str:
    """What Session._deliver leaves in the ledger for one approved send."""
    payload = Envelope.make(sender="operator:relay@op", to="peer", id=relay_id, hop=0, want=want, body="hi").compose()
    led.event("plan", relay_id=relay_id, data={"payload": payload, "target": target})
    led.event("answer", relay_id=relay_id, data={"approved": True})
    led.record_sent(relay_id, 0, target)
    return payload


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def test_relay_mcp_replies_into_the_inbox_and_lists_open_requests(relay_home):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    led = Ledger.default()
    sent(led, "op-1", "reply")
    sent(led, "op-2", "none")  # asks for nothing: not an open request
    refused = sent(led, "op-3", "ack")
    led.event("answer", relay_id="op-4", data={"approved": False})  # never approved: nothing was sent
    assert [r.relay_id for r in open_requests(led)] == ["op-1", "op-3"] and refused

    params = StdioServerParameters(command=sys.executable, args=["-m", "relay_repl", "mcp"],
                                   env={"RELAY_HOME": os.environ["RELAY_HOME"], "PYTHONPATH": os.getcwd()})
    async with anyio.create_task_group() as tg:
        inbox = Inbox(led, address="op", sender="operator:relay@op")
        await inbox.listen(tg)
        try:
            with anyio.fail_after(60):
                async with stdio_client(params) as streams, ClientSession(*streams) as client:
                    init = await client.initialize()
                    assert init.server_info.name == "relay" and init.capabilities.tools is not None
                    await client.send_ping()
                    names = {t.name for t in (await client.list_tools()).tools}
                    assert {MCP_TOOL, REQUESTS_TOOL} <= names

                    # this server was started by pytest, not by a session: it cannot say whose requests to show
                    listed = json.loads(text_of(await client.call_tool(REQUESTS_TOOL, {})))
                    assert listed["requests"] == [] and listed["session"] is None
                    assert "cannot be established" in listed["why"] and "no discovered session" in listed["why"]
                    mine = requests_for(led, ("codex:beta", "test"))["requests"]
                    assert [r["relay_id"] for r in mine] == ["op-1", "op-3"]
                    assert mine[0]["want"] == "reply" and mine[0]["target"] == "codex:beta"

                    bad = await client.call_tool(MCP_TOOL, {"relay_id": "op-99", "text": "hello"})
                    assert bad.is_error and "was not sent by the operator" in text_of(bad)
                    assert not inbox.received

                    ok = await client.call_tool(MCP_TOOL, {"relay_id": "op-1", "text": "all\ntests pass"})
                    assert not ok.is_error, text_of(ok)
                    done = json.loads(text_of(ok))
                    assert done["replied_to"] == "op-1" and done["hop"] == 1
                    while not inbox.received:
                        await anyio.sleep(0.02)
                    msg = inbox.received[0]
                    env = Envelope.parse(msg.line)
                    assert env is not None and env.body == "all tests pass" and env.hop == 1
                    # the MCP server has no agent environment: it answers as the session that was asked
                    assert env.sender == "agent:codex@beta" and env.id.startswith("beta-")
                    assert msg.origin["verifiedPeerPid"] != os.getpid()  # the MCP server process wrote it

                    # pytest started this server, so the inbox cannot verify the answer: it closes nothing
                    assert msg.verdict is not None and msg.verdict.verdict != "verified"
                    left = requests_for(led, ("codex:beta", "test"))["requests"]
                    assert [r["relay_id"] for r in left] == ["op-1", "op-3"]
                    led.event("linked", relay_id="op-1", data={"seq": msg.seq})  # what the session records
                    left = requests_for(led, ("codex:beta", "test"))["requests"]
                    assert [r["relay_id"] for r in left] == ["op-3"]

                    led.halt("test halt", by="operator")
                    halted = await client.call_tool(MCP_TOOL, {"relay_id": "op-3", "text": "ok"})
                    assert halted.is_error and "relay-halt" in text_of(halted)
                    assert len(inbox.received) == 1
        finally:
            await inbox.close()
            tg.cancel_scope.cancel()


def test_relay_requests_lists_only_the_callers_own_requests(relay_home):
    """A peer must not read another session's asks: exact spec match, not a prefix (codex:beta
    sees nothing sent to codex:beta2 or claude:alpha)."""
    led = Ledger.default()
    sent(led, "op-1", "reply", target="codex:beta")
    sent(led, "op-2", "reply", target="codex:beta2")
    sent(led, "op-3", "ack", target="claude:alpha")
    assert [r["relay_id"] for r in requests_for(led, ("codex:beta", "own pid"))["requests"]] == ["op-1"]
    assert [r["relay_id"] for r in requests_for(led, ("claude:alpha", "own pid"))["requests"]] == ["op-3"]
    nobody = requests_for(led, (None, "pid 7 hosts beta, beta2; thread not provable"))
    assert nobody["requests"] == [] and "thread not provable" in nobody["why"]


def test_the_answerer_is_the_calling_session_else_the_one_asked_else_relay_mcp(relay_home, monkeypatch):
    """Who a relay_reply from this server claims to be, in order of evidence (mcp_tools.answerer)."""
    from relay_repl.session.mcp import mcp_tools

    led = Ledger.default()
    sent(led, "op-1", "reply", target="codex:beta (pid 7, idle)")
    monkeypatch.setattr(mcp_tools, "detect_me", lambda: None)  # as under an agent host's reduced environment
    calling: list[tuple[str | None, str]] = [("claude:alpha", "own pid")]
    monkeypatch.setattr(mcp_tools, "caller_session", lambda call: calling[0])
    assert mcp_tools.answerer("op-1", led).sender == "agent:claude@alpha"
    for unproven in [(None, "not provable"), ("claude:", "half a spec"), (":alpha", "half a spec")]:
        calling[0] = unproven
        assert mcp_tools.answerer("op-1", led).sender == "agent:codex@beta"  # the session the operator asked
    assert mcp_tools.answerer("op-unknown", led).sender == "agent:mcp@relay-mcp"  # no evidence at all
