"""Live: a lab session restarted by `ensure_lab` runs with the configuration it started with
(issue 16 case 10).

Before: `_restart_dead` rebuilt the Claude command without `--mcp-config`, so a restarted
Claude session had no relay MCP server and a `--reply-via mcp` send to it was refused. Now
one builder (`lab.client_setup.launch_command`) serves the first start and every restart.

On conftest's shared 2+2 lab (Claude alpha and beta, Codex gamma and delta; only Claude's
restart lost anything), not the 1+1 lab most modules share nor one of its own (a lab costs
about 20 s to start and take down): beta and the Codex sessions stay alive, so `ensure_lab`
restarts alpha in place (a lab with no live session at all is rebuilt from scratch by `up`,
which never lost the flag), and the later modules on that lab get the restarted alpha, ready,
from their own `lab` fixture.
"""

from __future__ import annotations

import os
import signal

import pytest

import relay_repl.lab.launcher as launcher
from relay_repl.agents.claude_code.agent import KIND as CLAUDE
import relay_repl.agents.claude_code.lab as claude_lab
from relay_repl.lab.stubs.client import StubClient
from relay_repl.lab.stubs.script import Rule, Step, ToolCall
from relay_repl.system.polling import poll_until
from relay_repl.system.proc import read_cmdline
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.fixture(scope="module")
def lab_home(lab_home_2x2):
    return lab_home_2x2


@pytest.fixture(scope="module")
def lab_size() -> tuple[int, int]:
    return 2, 2


def _alpha():
    st = launcher.status()
    assert st is not None
    return next(x for x in st.of_kind(CLAUDE) if x.name == "alpha")


def _mcp_config_of(pid: int) -> str | None:
    argv = read_cmdline(pid) or []
    return argv[argv.index("--mcp-config") + 1] if "--mcp-config" in argv[:-1] else None


async def test_a_restarted_claude_keeps_its_relay_mcp_server_and_answers_by_mcp(lab):
    before = _alpha()
    assert before.alive and before.pid
    beta = next(x for x in launcher.status().of_kind(CLAUDE) if x.name == "beta")
    config = _mcp_config_of(before.pid)
    assert config == str(claude_lab.mcp_config_path(launcher.layout().root))

    os.kill(before.pid, signal.SIGKILL)

    async def dead():
        return True if not _alpha().alive else None

    assert await poll_until(dead, timeout=15, interval=0.1), "alpha still shown alive after SIGKILL"

    said: list[str] = []
    launcher.ensure_lab(claude=2, codex=2, progress=said.append)  # restarts alpha only
    assert any(line.startswith("restarting alpha") for line in said), said
    after = _alpha()
    assert after.alive and after.pid and after.pid != before.pid
    assert next(x for x in launcher.status().of_kind(CLAUDE) if x.name == "beta").pid == beta.pid
    assert _mcp_config_of(after.pid) == config, read_cmdline(after.pid)

    # the route is offered and used: alpha answers through relay_reply on its MCP server
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.add_rule("alpha", Rule(match=rid, once=True, steps=[
            Step(tool=ToolCall(name="ToolSearch", input={"query": "select:mcp__relay__relay_reply", "max_results": 1})),
            Step(tool=ToolCall(name="mcp__relay__relay_reply", input={"relay_id": rid, "text": "alpha after restart"})),
            Step(text="done")]))
        d = await s.send("claude:alpha", "answer by mcp after a restart", want="reply", reply_via="mcp",
                         transport="claude-code-socket", timeout=30)
        assert d.outcome == "delivered" and "relay MCP server" in (d.plan.reply_route or ""), d.summary()
        answer = await d.wait_reply(30)
        assert answer is not None and answer.body == "alpha after restart" and d.state.value == "replied"
        assert answer.verdict is not None and answer.verdict.verdict == "verified"
        assert answer.verdict.session == "claude:alpha" and answer.verdict.session_pid == after.pid
