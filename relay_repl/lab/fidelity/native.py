"""Fidelity checks: codex-queue, claude-code-socket and claude-code-message against the real
clients, in a 1+1 lab (Claude alpha, Codex beta).

Package code, so `relay fidelity` runs them from an installed wheel; the live tests
(tests/transports/test_native_live.py, test_claude_message_live.py) call these same functions.
A check raises AssertionError when its fact does not hold.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
from relay_repl.core.delivery import DeliveryState
from relay_repl.lab.sessions import live_session
from relay_repl.lab.stubs.client import StubClient

CLAUDE, CODEX = "claude:alpha", "codex:beta"


def main_texts(reqs: Any) -> list[str]:
    return [json.dumps(r.body) for r in reqs if r.kind == "main"]


async def wait_idle(name: str) -> None:
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(name, timeout=60))


def _stub_control() -> Any:
    st = launcher.status()
    assert st is not None, "no lab"
    return st.stub.control


async def codex_queue_to_an_idle_target() -> None:
    async with StubClient(_stub_control()) as stub, live_session([True]) as (s, gate, _):
        await stub.clear_requests("beta")
        d = await s.send(CODEX, "queue to idle codex", transport="codex-queue", timeout=30)
        assert d.state is DeliveryState.IN_TURN, d.summary()
        assert d.exit_code == 0, d.summary()
        enq = next(e for e in d.evidence if e.stage == "enqueue")
        assert enq.data["item_id"] == d.extra.item_id, (enq.data, d.extra)
        turn = next(e for e in d.evidence if e.stage == "turn")
        assert turn.data["turn_trigger"] == "queue" and turn.data["text"] == gate.shown[0].payload, turn.data
        reqs = await stub.requests("beta", kind="main", min_count=1, timeout=20)
        assert any(gate.shown[0].payload in t for t in main_texts(reqs)), "the model never read the payload"
    await wait_idle("beta")


async def codex_queue_to_a_busy_target_waits_for_its_turn() -> None:
    await anyio.to_thread.run_sync(lambda: helpers.make_busy("beta", 8))
    async with live_session([True]) as (s, gate, _):
        await s.refresh()
        d = await s.send(CODEX, "queue behind a busy turn", transport="codex-queue", timeout=60)
        assert d.state is DeliveryState.IN_TURN, d.summary()
        enq = next(e for e in d.evidence if e.stage == "enqueue")
        assert enq.data["row"] is not None, "a busy target must leave the row pending at first read"
        states = [e.state for e in d.evidence]
        assert states.index(DeliveryState.QUEUED) < states.index(DeliveryState.IN_TURN), states
    await wait_idle("beta")


async def claude_socket_to_an_idle_target() -> None:
    async with StubClient(_stub_control()) as stub, live_session([True]) as (s, gate, _):
        d = await s.send(CLAUDE, "socket to idle claude", transport="claude-code-socket", timeout=30)
        assert d.state is DeliveryState.IN_TURN, d.summary()
        rec = next(e for e in d.evidence if e.stage == "transcript").data["record"]
        assert rec["origin"]["verifiedPeerPid"] == os.getpid(), rec["origin"]
        assert rec["origin"]["msg_id"] == d.extra.msg_id, rec["origin"]
        reqs = await stub.requests("alpha", kind="main", min_count=1, timeout=20)
        assert any(gate.shown[0].payload in t for t in main_texts(reqs)), "the model never read the payload"
    await wait_idle("alpha")


async def claude_socket_transports_to_a_busy_target(transport: str) -> None:
    async with live_session([True, True]) as (s, gate, _):
        if transport == "claude-code-message":
            assert await s.register_inbox() is True
        await anyio.to_thread.run_sync(lambda: helpers.make_busy("alpha", 6))
        await s.refresh()
        target = await s.target(CLAUDE)
        assert target.state == "busy", target.state
        d = await s.send(CLAUDE, f"{transport} to busy claude", transport=transport, timeout=45)
        assert d.state is DeliveryState.IN_TURN, d.summary()
        assert "busy" in " ".join(gate.shown[-1].notes), gate.shown[-1].notes
        rec = next(e for e in d.evidence if e.stage == "transcript").data["record"]
        assert rec["origin"]["verifiedPeerPid"] == os.getpid(), rec["origin"]
    await wait_idle("alpha")


async def message_plan_shows_the_wrapper_that_is_written_and_recorded() -> None:
    async with live_session([True, True]) as (s, gate, _inbox):
        assert await s.register_inbox() is True
        reg = s.registration
        # registering planned every file it then created
        assert [f.split()[:2] for f in gate.shown[0].files] == [
            ["creates", f"{reg.record_path}:"], ["creates", f"{reg.key_path}:"], ["creates", f"{reg.socket_path}:"]], \
            gate.shown[0].files
        assert all(Path(f).exists() for f in (reg.record_path, reg.key_path, reg.socket_path))
        d = await s.send(CLAUDE, "what you approve is what arrives", transport="claude-code-message", timeout=30)
        assert d.state is DeliveryState.IN_TURN, d.summary()
        plan = gate.shown[-1]
        # 3 payload: the exact frame content, wrapper included
        assert plan.payload.startswith(f'<cross-session-message from="uds:{reg.socket_path}" from-name="{reg.name}" '
                                       'from-mode="prompting">\n[relay/1 '), plan.payload
        assert plan.payload.endswith("] what you approve is what arrives\n</cross-session-message>"), plan.payload
        assert "3 payload" in plan.render() and plan.payload in plan.render()
        write = next(e for e in d.evidence if e.stage == "write")
        assert write.data["content"] == plan.payload, "the bytes written are not the bytes approved"
        assert write.data["reply_to"] == str(reg.socket_path), write.data
        # the receiver parsed that very wrapper, and its model read that very payload
        rec = next(e for e in d.evidence if e.stage == "transcript").data["record"]
        assert plan.payload in rec["content"], rec
        assert rec["origin"]["fromMode"] == "prompting" and rec["origin"]["name"] == reg.name, rec["origin"]
        assert rec["origin"]["from"] == f"uds:{reg.socket_path}", rec["origin"]
        # no file is created by this send (the listed inbox socket was planned at registration)
        assert plan.files == (), plan.files
        assert any('"content":<payload 3>' in n and f'"from":"uds:{reg.socket_path}"' in n for n in plan.notes), \
            plan.notes
    await wait_idle("alpha")


CHECKS = {
    "codex_queue_to_an_idle_target": codex_queue_to_an_idle_target,
    "codex_queue_to_a_busy_target_waits_for_its_turn": codex_queue_to_a_busy_target_waits_for_its_turn,
    "claude_socket_to_an_idle_target": claude_socket_to_an_idle_target,
    "claude_socket_transports_to_a_busy_target[claude-code-socket]":
        lambda: claude_socket_transports_to_a_busy_target("claude-code-socket"),
    "claude_socket_transports_to_a_busy_target[claude-code-message]":
        lambda: claude_socket_transports_to_a_busy_target("claude-code-message"),
    "message_plan_shows_the_wrapper_that_is_written_and_recorded":
        message_plan_shows_the_wrapper_that_is_written_and_recorded,
}
