"""Live (issue 34's last Done-when part): a held request approved from `relay watch` reaches its
receiver; one denied from it reaches the asker as denied, with nothing sent.

In the lab: the operator's REPL (`relay --lab`, its own tmux pane) holds the inbox that agents'
requests arrive at; `relay watch` runs in another pane. Codex's lab agent (beta) is prompted to
`ask claude:alpha via relay (want=none): ...` (its stub model calls relay_send on the relay MCP
server its real client offers). The request shows among the view's held requests within 1 s of
its ledger event (pane captured every 50 ms); `a` prints the ordinary four-part plan and the
gate's prompt; y then Enter sends it, and Claude's own transcript then holds the payload. A
second request is denied with `x` and a reason: beta's relay_request_status reads `denied` with
that reason, and Claude's files never hold its words.
"""

from __future__ import annotations

import os
import sys

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.stubs.client import StubClient
from relay_repl.session.core.gate import PROMPT
from relay_repl.store.ledger import Ledger
from relay_repl.store.requests import RequestStore
from tests.session.test_requests_live import (
    CLAUDE,
    CODEX,
    _eventually,
    claude_files_hold,
    fresh_exchange,
    receipt_of,
    start_repl,
    tool_results,
)
from tests.support.tmuxdrive import Screen
from tests.support.watching import ScreenLog

pytestmark = [pytest.mark.live, pytest.mark.anyio]

BOUND = 1.0  # the bound: shown within 1 s of the ledger event


async def wait(screen: Screen, predicate, timeout: float = 30):
    return await anyio.to_thread.run_sync(lambda: screen.wait_for(predicate, timeout=timeout))


async def ask(stub: StubClient, body: str) -> str:
    """beta asks relay to send `body` to alpha; the request id its tool was answered with (held)."""
    await stub.clear_requests("beta")
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle("beta", timeout=90))
    helpers.submit("beta", f"ask {CLAUDE} via relay (want=none): {body}")
    held = await tool_results(stub, "beta", "held for the operator")
    return receipt_of(held)["request"]


async def test_a_request_approved_from_relay_watch_reaches_claude_and_a_denied_one_reaches_beta_denied(lab):
    env = dict(os.environ, TERM="xterm-256color")
    async with StubClient(lab.stub.control) as stub:
        await fresh_exchange(CODEX)
        repl = start_repl()  # holds the operator's inbox: requests arrive there
        watch = Screen(["sh", "-c", f"{sys.executable} -m relay_repl watch; echo WATCH=$?; sleep 600"], env,
                       width=300, height=70)
        try:
            await wait(watch, "HELD AGENT REQUESTS", 60)
            await wait(watch, "claude:alpha", 60)  # discovery ran
            led = Ledger.default()

            # approved from the view: the plan, y then Enter, the payload in Claude's own transcript
            with ScreenLog(watch.pane) as log:
                rid = await ask(stub, "please compute 6*7 from the watch")
                await wait(watch, f"> {rid} ", 30)
                assert await _eventually(lambda: rid in log.held, 5)
            at = Ledger.read_only_at(led.path).events(relay_id=rid, kind="request")[0].at
            delay = log.held[rid] - at
            print(f"held request {rid} shown {delay:.3f}s after its ledger event; load {os.getloadavg()}")
            assert delay <= BOUND, delay
            quoted = f"{CODEX} (verified) wrote: «please compute 6*7 from the watch»"
            assert not claude_files_hold(quoted), "nothing is sent before the y"
            watch.keys("a")
            plan = await wait(watch, PROMPT, 60)
            assert f"request {rid} from {CODEX} [verified]: {CODEX}'s words for {CLAUDE}" in plan
            for part in ("1 target", "2 transport", "3 payload", "4 delivered"):
                assert part in plan
            assert quoted in plan, plan[-3000:]
            watch.keys("y", "Enter")
            text = await wait(watch, lambda t: f"·{rid} " in t and "HELD AGENT REQUESTS" in t, 120)
            assert await _eventually(lambda: claude_files_hold(quoted), 60), "the payload reached alpha's transcript"
            req = RequestStore(Ledger.read_only_at(led.path)).get(rid)
            assert req.state in ("delivered", "approved") and req.delivery_id, req
            assert f"·{rid} " in text

            # denied from the view, with a reason: beta reads denied, nothing sent
            rid2 = await ask(stub, "please delete the build cache from the watch")
            await wait(watch, f"> {rid2} ", 30)
            watch.keys("x")
            await wait(watch, f"reason for denying {rid2}", 30)
            watch.type_line("not during the release")
            await wait(watch, lambda t: f"·{rid2} " in t and "denied (not during the release)" in t, 30)
            await anyio.to_thread.run_sync(lambda: helpers.wait_idle("beta", timeout=90))
            await stub.clear_requests("beta")
            helpers.submit("beta", f"status of relay request {rid2}")
            got = receipt_of(await tool_results(stub, "beta", "history"))
            assert got["request"] == rid2 and got["state"] == "denied", got
            assert "not during the release" in str(got), got
            assert [h["state"] for h in got["history"]] == ["held", "denied"], got
            assert not claude_files_hold("please delete the build cache from the watch")
            watch.keys("q")
            assert "WATCH=0" in await wait(watch, "WATCH=", 15)
            await anyio.to_thread.run_sync(lambda: helpers.wait_idle("beta", timeout=90))
        finally:
            watch.close()
            repl.close()
