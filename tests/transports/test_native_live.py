"""Live: codex-queue, claude-code-socket and claude-code-message against the real clients in the lab."""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial

import anyio
import pytest

from tests.support.sessions import live_session

from relay_repl.agents.claude_code.transcript import turn_written
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import PolicyRefusal
import relay_repl.lab.helpers as helpers
from relay_repl.lab.fidelity import native as checks
from relay_repl.lab.fidelity.native import main_texts  # noqa: F401  (one copy: the checks' own)
from relay_repl.lab.stubs.client import StubClient, send_message_rule
from relay_repl.system.polling import poll_until_sync

pytestmark = [pytest.mark.live, pytest.mark.anyio]

CLAUDE, CODEX = "claude:alpha", "codex:beta"


def typed_regions(screen: str) -> tuple[str, str]:
    """What a keystroke of ours would change: the history, and the composer between its rules.

    Claude redraws two rows on its own timer (a status hint just above the composer,
    and tips below it), so those are left out; Codex's screen is compared whole."""
    lines = screen.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("─")]
    if len(rules) < 2:
        return screen, ""
    upper, lower = rules[-2], rules[-1]
    return "\n".join(lines[: max(upper - 1, 0)]), "\n".join(lines[upper : lower + 1])


async def wait_idle(name: str) -> None:
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(name, timeout=60))


async def test_codex_queue_to_an_idle_target(lab):
    await checks.CHECKS["codex_queue_to_an_idle_target"]()


async def test_codex_queue_to_a_busy_target_waits_for_its_turn(lab):
    await checks.CHECKS["codex_queue_to_a_busy_target_waits_for_its_turn"]()


async def test_claude_socket_to_an_idle_target(lab):
    await checks.CHECKS["claude_socket_to_an_idle_target"]()


@pytest.mark.parametrize("transport", ["claude-code-socket", "claude-code-message"])
async def test_claude_socket_transports_to_a_busy_target(lab, transport):
    await checks.CHECKS[f"claude_socket_transports_to_a_busy_target[{transport}]"]()


@pytest.mark.parametrize("spec, transport, stubname", [
    (CLAUDE, "claude-code-socket", "alpha"), (CODEX, "codex-queue", "beta"),
    (CLAUDE, "tmux", "alpha"), (CODEX, "tmux", "beta"),
])
async def test_answering_no_leaves_no_trace(lab, spec, transport, stubname):
    async with StubClient(lab.stub.control) as stub, live_session([False]) as (s, gate, _):
        target = await s.target(spec)
        before = len(await stub.requests(stubname))
        transcript = target.evidence_file
        if spec == CLAUDE and transcript:
            # an earlier test's last turn may still be reaching alpha's transcript (Claude's record says
            # idle before its timed write of the turn's last records): the size counts from after it
            written = await anyio.to_thread.run_sync(
                partial(poll_until_sync, lambda: turn_written(transcript), timeout=30, interval=0.05))
            assert written, f"alpha's latest turn not written to {transcript} after 30 s"
        size = os.path.getsize(transcript) if transcript and os.path.exists(transcript) else 0
        screen = helpers.capture(stubname)
        d = await s.send(spec, "this must never arrive", transport=transport)
        assert d.state is DeliveryState.WITHHELD and len(gate.shown) == 1
        await anyio.sleep(3)  # nothing may arrive: absence has no event to wait for
        assert len(await stub.requests(stubname)) == before
        assert (os.path.getsize(transcript) if transcript and os.path.exists(transcript) else 0) == size
        assert typed_regions(helpers.capture(stubname)) == typed_regions(screen)
        assert [e.kind for e in s.ledger.events(relay_id=d.relay_id)] == ["plan", "answer", "outcome"]


async def test_durable_path_to_claude_is_reported_not_downgraded(lab):
    async with live_session([True]) as (s, gate, _):
        with pytest.raises(PolicyRefusal, match="no durable transport reaches claude:alpha.*not downgrading"):
            await s.send(CLAUDE, "needs durability", durable=True)
        assert gate.shown == []


def listed_names() -> dict[str, int]:
    out = subprocess.run(["claude", "agents", "--json"], capture_output=True, text=True, timeout=30, check=True)
    return {a["name"]: a["pid"] for a in json.loads(out.stdout)}


async def test_listed_inbox_gets_a_native_sendmessage_reply(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True]) as (s, gate, inbox):
        assert await s.register_inbox() is True
        name = s.registration.name
        assert (await anyio.to_thread.run_sync(listed_names)).get(name) == os.getpid()
        reply = f"[relay/1 from=peer:claude-code@alpha to=operator id=alpha-native-1 hop=1 want=none] got {name}"
        await stub.add_rule("alpha", send_message_rule(name, reply, match="native reply please"))
        d = await s.send(CLAUDE, "native reply please", want="reply", native_reply=True, timeout=30)
        assert d.transport == "claude-code-message" and d.state is DeliveryState.IN_TURN, d.summary()
        with anyio.fail_after(60):
            while not inbox.received:
                await anyio.sleep(0.2)
        msg = inbox.received[0]
        assert msg.line == reply and msg.relay_id == "alpha-native-1"
        assert msg.origin["verifiedPeerPid"] == lab.session("alpha").pid
        assert msg.origin["claims"].get("from-name") == "alpha"
    # after the REPL's inbox closes, nothing of it remains in Claude's registry
    assert name not in await anyio.to_thread.run_sync(listed_names)
    assert not s.registration.record_path.exists() and not s.registration.key_path.exists()
    assert not s.registration.socket_path.exists()
    await wait_idle("alpha")


async def test_a_codex_agent_answers_with_relay_reply(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        rid = s.ledger.peek_next_id(s.me.address)
        await stub.tool_call("beta", "exec_command",
                             {"cmd": f"relay reply '{rid}' 'tests pass, from codex'", "yield_time_ms": 30000},
                             match="reply by command", then_text="replied")
        d = await s.send(CODEX, "reply by command please", want="reply", timeout=30)
        assert d.relay_id == rid and d.outcome == "delivered", d.summary()
        with anyio.fail_after(60):
            while not inbox.received:
                await anyio.sleep(0.2)
        env = Envelope.parse(inbox.received[0].line)
        thread = (await s.target(CODEX)).address
        assert (env.sender, env.hop, env.body) == (f"agent:codex@{thread}", 1, "tests pass, from codex")
    await wait_idle("beta")
