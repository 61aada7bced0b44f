"""A halt wins over an open prompt (issue 38), through the real pieces: the terminal gate's
prompt_toolkit prompt waits on a pipe, the session's inbox listens on a real unix socket, and a
`relay-halt` message arrives there while the plan is on screen. The inbox is served while the
prompt waits (the halt is recorded before any answer), and the `y` that follows sends nothing:
`withheld: relay-halt from P arrived while the plan was shown`. The same for a send to a host
(its plan answered here: the host is told No) and for a recipe's step.
"""

from __future__ import annotations

import json
import socket
import uuid

import anyio
import pytest
from prompt_toolkit.input import create_pipe_input

from relay_repl.core.delivery import DeliveryState
from relay_repl.session.app import make_session
from relay_repl.session.core.gate import TerminalGate
from relay_repl.system.polling import poll_until
from tests.session.test_gate import _output, _prompt_up, _Screen
from relay_repl.testing import HOST

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
HALT = "[relay/1 from=agent:codex@beta to=operator id=beta.x-1 hop=1 want=none] relay-halt: stop everything"


def write_to_inbox(path: str, line: str) -> None:
    """One Claude-wire user frame, written as any local process can (the inbox judges its pid)."""
    frame = {"type": "user", "message": {"role": "user", "content": line}, "msg_id": str(uuid.uuid4())}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(json.dumps(frame).encode() + b"\n")


async def halted_at_the_prompt(target: str, body: str = "hello") -> tuple:
    """`session.send(target, body)` on a terminal gate; once its prompt is drawn a halt reaches the
    inbox, is seen recorded while the prompt still waits, then the operator types y."""
    screen = _Screen()
    shown: list[str] = []
    with create_pipe_input() as inp:
        session = make_session(fake=True, discover=False, echo=shown.append,
                               approve=TerminalGate(input=inp, output=_output(screen), write=shown.append))
        out: dict = {}
        async with anyio.create_task_group() as tg:
            await session.open_inbox(tg, echo=shown.append)

            async def send() -> None:
                out["d"] = await session.send(target, body)

            tg.start_soon(send)
            await _prompt_up(screen)
            await anyio.to_thread.run_sync(write_to_inbox, str(session.inbox_server.path), HALT)

            async def recorded() -> bool | None:
                return True if session.ledger.active_halt() is not None else None

            assert await poll_until(recorded, timeout=10, interval=0.02), "the inbox was not served while the prompt waited"
            assert "d" not in out  # still waiting for the answer
            inp.send_text("y\r")
            await poll_until(lambda: _done(out), timeout=20, interval=0.02)
            await session.close_inbox()
            tg.cancel_scope.cancel()
    return session, out["d"], shown


async def _done(out: dict) -> bool | None:
    return True if "d" in out else None


async def test_a_halt_in_the_inbox_while_the_prompt_waits_wins_over_y(relay_home):
    session, d, shown = await halted_at_the_prompt("fake:inbox")
    try:
        assert d.state is DeliveryState.WITHHELD and d.exit_code == 1
        assert d.reason == "relay-halt from agent:codex@beta arrived while the plan was shown"
        assert session._transports["memory"].received == []
        assert "approved" in shown and "withheld: relay-halt from agent:codex@beta arrived while the plan was shown" in shown
        events = session.ledger.events()
        halt = next(e for e in events if e.kind == "halt")
        answer = next(e for e in events if e.kind == "answer" and e.relay_id == d.relay_id)
        assert halt.seq < answer.seq and answer.data["approved"] is False
        assert not session.ledger.was_sent(d.relay_id)
    finally:
        session.ledger.close()


async def test_a_halt_while_a_hosts_plan_is_shown_tells_the_host_no(hostile, relay_home):
    hostile("honest")
    session, d, shown = await halted_at_the_prompt(f"{HOST}/claude:alpha")
    try:
        assert d.state is DeliveryState.WITHHELD
        assert d.reason == "relay-halt from agent:codex@beta arrived while the plan was shown"
        approves = [r for r in hostile.requests() if r["op"] == "approve"]
        assert [a["args"]["digest"] for a in approves] == [None]  # the host was told No
        assert not [e for e in session.ledger.events() if e.kind == "remote-approval"]
    finally:
        await session.sender.remote.aclose()
        session.ledger.close()


async def test_a_halt_in_a_duplicate_message_is_still_recorded(relay_home):
    """A halt wins even in a message dropped as a duplicate (its id seen before)."""
    session = make_session(fake=True, discover=False, echo=None)
    try:
        async with anyio.create_task_group() as tg:
            await session.open_inbox(tg, echo=lambda line: None)
            path = str(session.inbox_server.path)
            await anyio.to_thread.run_sync(write_to_inbox, path, HALT.replace(" relay-halt: stop everything", " hi"))

            async def seen() -> bool | None:
                return True if session.ledger.sightings("beta.x-1") else None

            assert await poll_until(seen, timeout=10, interval=0.02)
            await anyio.to_thread.run_sync(write_to_inbox, path, HALT)

            async def halted() -> bool | None:
                return True if session.ledger.active_halt() is not None else None

            assert await poll_until(halted, timeout=10, interval=0.02)
            await session.close_inbox()
            tg.cancel_scope.cancel()
    finally:
        session.ledger.close()


def write_raw(path: str, data: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(data)


@pytest.mark.parametrize("raw", [b"relay-halt, not json\n", b'{"type":"user","message":{"content":[{"type":"text",'
                                 b'"text":"relay-halt"}]}}\n', b'{"type":"user","message":["relay-halt"]}\n',
                                 b'["relay-halt"]\n'], ids=["garbage", "list-content", "list-message", "not-object"])
async def test_a_halt_in_a_line_the_inbox_does_not_keep_still_halts(relay_home, raw):
    session = make_session(fake=True, discover=False, echo=None)
    try:
        async with anyio.create_task_group() as tg:
            await session.open_inbox(tg, echo=lambda line: None)
            await anyio.to_thread.run_sync(write_raw, str(session.inbox_server.path), raw)

            async def halted() -> bool | None:
                return True if session.ledger.active_halt() is not None else None

            assert await poll_until(halted, timeout=10, interval=0.02)
            await session.close_inbox()
            tg.cancel_scope.cancel()
    finally:
        session.ledger.close()


async def test_a_nesting_bomb_does_not_end_the_inbox(relay_home):
    """1 MB of `[` on the inbox socket (RecursionError in json) is logged as garbage; the next message is kept."""
    session = make_session(fake=True, discover=False, echo=None)
    try:
        async with anyio.create_task_group() as tg:
            await session.open_inbox(tg, echo=lambda line: None)
            path = str(session.inbox_server.path)
            await anyio.to_thread.run_sync(write_raw, path, b"[" * 1_000_000 + b"\n")
            await anyio.to_thread.run_sync(write_to_inbox, path, HALT.replace("relay-halt: stop everything", "hello"))

            async def kept() -> bool | None:
                return True if session.ledger.inbox() else None

            assert await poll_until(kept, timeout=10, interval=0.02), "the inbox stopped after the bomb"
            assert session.ledger.events(kind="inbox-garbage")
            await session.close_inbox()
            tg.cancel_scope.cancel()
    finally:
        session.ledger.close()
