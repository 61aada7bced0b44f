"""The gate across the channel: the serving relay carries out only the plan whose digest came
back approved, once; a wrong digest, a No, or a channel that closes while asking is a No there."""

from __future__ import annotations

import json
import os
import threading

import anyio
import pytest

from relay_repl.core.approval import plan_digest
from relay_repl.core.plan import Plan
from relay_repl.core.serve_wire import PROTOCOL_VERSION
from relay_repl.session.app import make_session
from relay_repl.session.remote.serve import Server, serve


class Pipe:
    """The two ends of a channel, in-process: lines to the server, lines from it."""

    def __init__(self) -> None:
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        self.srv_in, self.to_srv = os.fdopen(r1, "rb"), os.fdopen(w1, "wb", buffering=0)
        self.from_srv, self.srv_out = os.fdopen(r2, "rb"), os.fdopen(w2, "wb", buffering=0)

    def send(self, op: str, i: int, **args) -> None:
        self.to_srv.write(json.dumps({"v": PROTOCOL_VERSION, "id": i, "op": op, "args": args}).encode() + b"\n")

    def read(self) -> dict:
        return json.loads(self.from_srv.readline())


def run_server(pipe: Pipe, sessions: list) -> threading.Thread:
    def make(**kw):
        s = make_session(fake=True, discover=False, **kw)
        sessions.append(s)
        return s

    t = threading.Thread(target=anyio.run, args=(lambda: serve(pipe.srv_in, pipe.srv_out, Server(make_session=make)),),
                         daemon=True)
    t.start()
    return t


def fake_writes(sessions) -> list[str]:
    return list(sessions[0]._transports["memory"].received) if sessions else []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("answer", ["right", "wrong", "no", "eof"])
def test_only_the_approved_digest_is_carried_out(relay_home, answer):
    pipe = Pipe()
    sessions: list = []
    t = run_server(pipe, sessions)
    pipe.send("send", 1, target="fake:inbox", body="hello there", want="none")
    ask = pipe.read()
    assert ask["ok"] and ask["id"] == 1 and ask["ask"] is not None
    plan = Plan.model_validate(ask["ask"]["plan"])
    assert plan_digest(plan) == ask["ask"]["digest"] and "hello there" in plan.payload
    if answer == "eof":
        pipe.to_srv.close()
        t.join(30)
        assert fake_writes(sessions) == []
        return
    digest = {"right": ask["ask"]["digest"], "wrong": "0" * 64, "no": None}[answer]
    pipe.send("approve", 1, digest=digest)
    final = pipe.read()
    assert final["ok"] and final["id"] == 1 and final.get("ask") is None
    state = final["result"]["state"]
    if answer == "right":
        assert state not in ("withheld", "refused", "failed") and len(fake_writes(sessions)) == 1
    else:
        assert state == "withheld" and fake_writes(sessions) == []
    # a second approve with the same digest is not a second send: nothing is asking
    pipe.send("approve", 1, digest=ask["ask"]["digest"])
    pipe.send("hello", 2, protocol=PROTOCOL_VERSION)
    assert pipe.read()["id"] == 2
    assert len(fake_writes(sessions)) == (1 if answer == "right" else 0)
    pipe.to_srv.close()
    t.join(30)
