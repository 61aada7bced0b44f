"""Live: the lab's agents answer a relay envelope that asks for a reply, with no scripting.

The REAL Claude Code and Codex in the lab get `want=reply` from the operator's session; the
stub models' default makes Claude call SendMessage to the operator's listed inbox and Codex
call relay_reply on the relay MCP server its configuration offers (a scripted step still proves
its shell route, `relay reply`). What arrives in the running Inbox is checked: the answering process (the
kernel pid), the envelope (re=<our id>, hop 1, a recognisable body), and that a second copy
of the same id or a relay-halt gets nothing back.
"""

from __future__ import annotations

import re

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.session.core.inbox import user_frame
from relay_repl.system.polling import poll_until
from relay_repl.system.wire import send_frames
from relay_repl.lab.stubs.client import StubClient
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]

CLAUDE, CODEX = "claude:alpha", "codex:beta"


def header(line: str) -> dict[str, str]:
    head = line[len("[relay/1 "):line.index("]")]
    return dict(tok.split("=", 1) for tok in head.split(" "))


async def answers_to(inbox, relay_id: str, timeout: float) -> list:
    """Inbox messages whose envelope header answers `relay_id` (re=<id>), waiting up to `timeout`."""
    def hits() -> list:
        return [m for m in inbox.received if m.line.startswith("[relay/1 ") and header(m.line).get("re") == relay_id]
    async def check() -> list | None:
        return hits() or None
    return await poll_until(check, timeout=timeout, interval=0.1) or []


async def whole_turn(stub: StubClient, name: str, timeout: float = 30) -> list:
    """The main requests recorded since the last clear, once the turn's last one is among them.

    A turn ends with a request the stub answers with text (no tool call). The request after a
    tool call reaches the stub only after the tool ran, so the tool's effect (a message in our
    inbox) can come before it: reading the log at that moment misses the turn's end."""
    with anyio.fail_after(timeout):
        n = 1
        while True:
            reqs = await stub.requests(name, kind="main", min_count=n, timeout=timeout, body=False)
            if reqs and reqs[-1].reply_tool is None:
                return reqs
            n = len(reqs) + 1


async def wait_idle(name: str) -> None:
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(name, timeout=60))


async def test_claude_agent_answers_want_reply_by_sendmessage_to_the_listed_inbox(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True, True]) as (s, gate, inbox):
        assert await s.register_inbox() is True
        await stub.clear_requests("alpha")
        d = await s.send(CLAUDE, "please summarize the repo", want="reply", transport="claude-code-socket",
                         timeout=30)
        assert d.state in {DeliveryState.IN_TURN, DeliveryState.REPLIED}, d.summary()  # the answer may already be in
        got = await answers_to(inbox, d.relay_id, 30)
        assert len(got) == 1, [m.line for m in inbox.received]
        msg = got[0]
        fields = header(msg.line)
        assert fields["from"] == "agent:claude-code@alpha" and fields["hop"] == "1" and fields["want"] == "none"
        assert msg.line.endswith(f'reply to {d.relay_id}: received "please summarize the repo"')
        assert msg.origin["verifiedPeerPid"] == lab.session("alpha").pid  # the agent itself sent it
        assert msg.origin["claims"].get("from-name") == "alpha"
        tools = [r.reply_tool for r in await whole_turn(stub, "alpha")]
        reqs = await stub.requests("alpha", kind="main")
        offered = any(t.get("name") == "SendMessage" for t in reqs[0].body.get("tools", []))
        # SendMessage is deferred: ToolSearch loads it, unless an earlier turn already did
        assert tools == (["SendMessage", None] if offered else ["ToolSearch", "SendMessage", None]), tools
        await wait_idle("alpha")

        # a second question: SendMessage is loaded now, so the agent calls it directly
        await stub.clear_requests("alpha")
        d2 = await s.send(CLAUDE, "and the tests?", want="ack", transport="claude-code-socket", timeout=30)
        (ack,) = await answers_to(inbox, d2.relay_id, 30)
        assert ack.line.endswith(f"ack {d2.relay_id}")
        assert [r.reply_tool for r in await whole_turn(stub, "alpha")] == ["SendMessage", None]
        await wait_idle("alpha")

        # a replay of the same id, then a new id carrying relay-halt, injected raw into alpha's
        # socket: the agent answers neither (its turn ends with a text, no tool call)
        sock = (await s.target(CLAUDE)).socket
        await stub.clear_requests("alpha")
        halt = Envelope.make(sender=s.me.sender, to="peer", id=f"{s.me.address}-halt-1", want="reply",
                             body="relay-halt stop everything").compose()
        for n, line in enumerate([gate.shown[-1].payload, halt], start=1):
            await anyio.to_thread.run_sync(send_frames, sock, [user_frame(line, "test-injector")])
            reqs = await stub.requests("alpha", kind="main", min_count=n, timeout=30, body=False)
            assert len(reqs) == n and reqs[-1].reply_tool is None, [r.answered_by for r in reqs]
            await wait_idle("alpha")
        assert "duplicate relay id" in reqs[0].reply_text and "relay-halt" in reqs[1].reply_text
        # both turns ended with text and no tool call (above), so nothing can still be on its way
        assert len(inbox.received) == 2, [m.line for m in inbox.received]
    await wait_idle("alpha")


async def test_codex_agent_answers_want_reply_by_mcp_relay_reply(lab):
    """The lab's Codex offers the relay MCP server's tools (`[mcp_servers.relay]`): the agent calls
    relay_reply there, no `relay reply` Python start in a shell. Verified by the connecting process,
    the `relay mcp` server beta's Codex host started."""
    from relay_repl.system.proc import ancestors, read_cmdline

    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        await stub.clear_requests("beta")
        d = await s.send(CODEX, "please rerun the suite", want="reply", transport="codex-queue", timeout=30)
        assert d.state in {DeliveryState.IN_TURN, DeliveryState.REPLIED}, d.summary()  # the answer may already be in
        got = await d.wait_reply(60)
        assert got is not None, f"no reply reached the inbox: {d.summary()} {[m.line for m in inbox.received]}"
        fields = header(got.line)
        # relay_reply signs with the name the operator asked (an MCP server gets no CODEX_THREAD_ID)
        assert fields["from"] == "agent:codex@beta" and fields["hop"] == "1" and fields["re"] == d.relay_id
        assert re.search(rf"reply to {re.escape(d.relay_id)}: received \"please rerun the suite\"$", got.line)
        reqs = await whole_turn(stub, "beta")
        assert [r.reply_tool for r in reqs] == ["mcp__relay__relay_reply", None]
        tools = (await stub.requests("beta", kind="main"))[0].body.get("tools", [])
        assert any(t.get("type") == "namespace" and t.get("name") == "mcp__relay" for t in tools), tools
        beta = await s.target(CODEX)
        v = got.verdict
        assert v is not None and v.verdict == "verified" and v.session == CODEX and v.session_pid == beta.pid, v
        assert v.pid != beta.pid and beta.pid in ancestors(v.pid) and "mcp" in (read_cmdline(v.pid) or [])
    await wait_idle("beta")


async def test_codex_agent_can_still_answer_by_relay_reply_in_its_shell(lab):
    """The route for a Codex with no relay MCP server: `relay reply <id> <text>` run by its shell tool
    (here a scripted step, since the lab's Codex offers the MCP server). Verified: the connecting
    process is `relay reply`, a descendant of beta's Codex host; it signs with the thread id."""
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.tool_call("beta", "exec_command", {"cmd": f"relay reply {rid} beta via the shell"},
                             then_text="replied", match=rid)
        d = await s.send(CODEX, "answer from your shell", want="reply", transport="codex-queue", timeout=30)
        assert d.relay_id == rid, d.summary()
        got = await d.wait_reply(60)
        assert got is not None, f"no reply reached the inbox: {d.summary()} {[m.line for m in inbox.received]}"
        beta = await s.target(CODEX)
        env = Envelope.parse(got.line)
        assert env is not None and env.body == "beta via the shell" and env.re == rid
        assert env.sender == f"agent:codex@{beta.address}"  # `relay reply` reads CODEX_THREAD_ID
        v = got.verdict
        assert v is not None and v.verdict == "verified" and v.session == CODEX and v.session_pid == beta.pid, v
        assert v.pid != beta.pid and v.chain[-1] == beta.pid, "relay reply ran under beta's Codex host"
    await wait_idle("beta")
