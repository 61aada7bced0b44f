"""Live, against the real clients in the 2x2 lab: a three-agent cycle of requests stops at hop 4, and a
replayed request id is dropped and logged (issue 31's Done-when).

claude:alpha asks codex:gamma, gamma asks codex:delta, delta asks alpha, ... each request approved (a
scripted y), each carrying one hop more than the message its asker last got from relay: an agent's
request never resets hop. gamma and delta are threads of ONE Codex daemon, so each of their requests is
attributed to its thread by that thread's own rollout holding the relay_send call in flight.
"""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.core.request import FRAME_TYPE
from relay_repl.lab.stubs.client import StubClient
from tests.session.test_requests_refusals_live import ask, prompt
from tests.session.test_requests_live import tool_results
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]

CYCLE = [("alpha", "claude:alpha"), ("gamma", "codex:gamma"), ("delta", "codex:delta")]


@pytest.fixture(scope="module")
def lab_size():
    return 2, 2


@pytest.fixture(scope="module")
def lab_home(lab_home_2x2):
    return lab_home_2x2


async def test_a_three_agent_cycle_of_requests_stops_at_hop_4(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True] * 5) as (s, gate, inbox):
        # the operator starts a new exchange with alpha (hop 0): the cycle's hops count from it
        d0 = await s.send("claude:alpha", "start of a cycle", want="none")
        assert d0.outcome == "delivered", d0.summary()
        hops: list[int] = []
        for i in range(4):
            (asker, _), (_, to) = CYCLE[i % 3], CYCLE[(i + 1) % 3]
            rid = await ask(stub, asker, to, f"cycle step {i}", want="none")
            req = s.request(rid)
            assert req.asker == CYCLE[i % 3][1] and req.verdict == "verified", req
            hops.append(req.hop)
            d = await s.approve_request(rid, wait=0)
            assert d.outcome == "delivered" and s.ledger.sent_hop(d.relay_id) == req.hop, d.summary()
            if "codex:" in req.asker:
                assert "thread proven: its own rollout holds a relay_send call in flight" in req.evidence, req.evidence
        assert hops == [1, 2, 3, 4]
        # the fifth ask would carry hop 5: refused at once, nothing held, nothing sent
        asker, to = CYCLE[4 % 3][0], CYCLE[5 % 3][1]
        await stub.clear_requests(asker)
        await prompt(asker, f"ask {to} via relay (want=none): cycle step 4")
        out = await tool_results(stub, asker, "past the cap")
        assert "would carry hop 5, past the cap 4" in out and "never resets hop" in out
        assert list(s.requests) == [] and len(gate.shown) == 5, "|".join(p.action + "@" + (p.heading or "")[8:20] for p in gate.shown)
        for name, _ in CYCLE:
            await anyio.to_thread.run_sync(lambda n=name: helpers.wait_idle(n, timeout=90))


async def test_a_replayed_request_id_is_dropped_and_logged(lab):
    """delta's request, its envelope written again into the inbox by another process (a replay): the id
    was seen, so the copy is dropped and logged before anything else, and nothing new is held."""
    async with StubClient(lab.stub.control) as stub, live_session() as (s, gate, inbox):
        rid = await ask(stub, "delta", "claude:alpha", "asked once", s=s)
        line = s.request(rid).line
        replay = [sys.executable, "-c", (
            "import json, sys; from relay_repl.system.wire import send_frames; "
            "print(send_frames(sys.argv[1], [json.loads(sys.argv[2])]).decode())"),
            str(inbox.path), json.dumps({"type": FRAME_TYPE, "line": line})]
        res = await anyio.to_thread.run_sync(lambda: subprocess.run(replay, capture_output=True, text=True,
                                                                    timeout=60))
        got = json.loads(res.stdout.strip().splitlines()[-1])
        assert got["state"] == "refused" and "replayed request is dropped (logged)" in got["why"], res
        dup = s.ledger.events(kind="duplicate", relay_id=rid)
        assert len(dup) == 1 and dup[0].data["why"] == "replayed request id"
        assert [r.id for r in s.requests] == [rid]
        s.deny_request(rid, why="test over")
        await anyio.to_thread.run_sync(lambda: helpers.wait_idle("delta", timeout=90))
