"""A one-shot command's inbox (frontends/commands/common.py inbox_open: `relay send --want reply`,
`relay approve`, a recipe run) waits for its own answer and exits: it takes no agents' requests
(one held there would be said to nobody once it exits) and runs no sweeper; the REPL and
`relay serve` (Session.open_inbox's default) take them. Old code attached requests to every inbox."""

from __future__ import annotations

import json
import socket

import anyio
import pytest

from relay_repl.core.request import ANSWER_TYPE, FRAME_TYPE
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger

pytestmark = pytest.mark.anyio


def ask_raw(path: str, frame: dict) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(20)
        s.connect(path)
        s.sendall(json.dumps(frame).encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := s.recv(4096):
            got += chunk
    return json.loads(got.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("one_shot", [True, False])
async def test_only_an_inbox_that_serves_requests_takes_them(relay_home, one_shot):
    from relay_repl.frontends.commands.common import inbox_open

    led = Ledger(relay_home / "ledger.sqlite")
    s = Session(ledger=led, approve=ScriptedGate([]), me=Me(address="op"), providers=[], transports=[],
                echo=lambda line: None)
    frame = {"type": FRAME_TYPE, "line": "not an envelope"}
    if one_shot:
        async with inbox_open(s, lambda line: None):
            got = await anyio.to_thread.run_sync(ask_raw, str(s.answers.inbox_server.path), frame)
    else:
        async with anyio.create_task_group() as tg:
            await s.open_inbox(tg, echo=lambda line: None)
            got = await anyio.to_thread.run_sync(ask_raw, str(s.answers.inbox_server.path), frame)
            await s.close_inbox()
            tg.cancel_scope.cancel()
    led.close()
    assert got["type"] == ANSWER_TYPE and got["state"] == "refused", got
    assert ("takes no requests" in got["why"]) == one_shot, got
