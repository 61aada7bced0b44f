"""Live: an agent on the second host asks, the operator here decides (issue 31, across hosts), through
`relay lab up --hosts 2`.

h2's real Codex (h2/codex:beta), prompted in its own pane on h2, calls relay_send on the relay MCP
server its client runs there; the request reaches h2's `relay serve` inbox (opened by this session's
`host_requests("h2")`), which establishes the asker by h2's kernel and holds it in h2's ledger. Here
the operator lists it (`h2/beta-N`), approves it: h2 builds the plan for h2/claude:alpha and, once
alpha's answer is verified there, the answer's plan back to beta; both are shown at THIS gate with
their route. beta's rollout on h2 then holds `re=<request id>`, and the request's steps in h2's
ledger (what beta's relay_request_status reads) are held -> approved -> delivered.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from relay_repl.lab.second_host import sub_lab_env
from relay_repl.store.ledger import Ledger
from relay_repl.store.requests import RequestStore
from tests.lab.test_hosts_live import lab2, lab_home  # noqa: F401 - the lab plus its second host
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio, pytest.mark.timeout(900)]

YES = [True] * 20
PROMPT = ("import sys, relay_repl.lab.helpers as h; h.wait_idle(sys.argv[1], timeout=90); "
          "h.submit(sys.argv[1], sys.argv[2])")


def prompt_on_h2(home: Path, name: str, text: str) -> None:
    """Type `text` into session `name`'s pane on the second host (its own lab, its own tmux server)."""
    res = subprocess.run([sys.executable, "-c", PROMPT, name, text], env=sub_lab_env(home), capture_output=True,
                         text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr


def files_hold(root: Path, text: str) -> bool:
    return any(text in p.read_text(errors="replace") for p in root.rglob("rollout-*.jsonl") if p.is_file())


async def test_an_agent_on_h2_asks_and_the_operator_here_decides(lab2):  # noqa: F811
    home = Path(lab2.home)
    async with live_session(YES) as (s, gate, _inbox):
        try:
            before = {r.id for r in await s.host_requests("h2")}  # opens h2's inbox: its agents can ask now
            d0 = await s.send("h2/codex:beta", "a new exchange starts here", want="none", timeout=60)
            assert d0.outcome == "delivered", d0.summary()
            body = f"compute 6*7 on h2 {int(time.time())}"
            await anyio.to_thread.run_sync(lambda: prompt_on_h2(home, "beta", f"ask claude:alpha via relay "
                                                                             f"(want=reply): {body}"))
            req = None
            with anyio.fail_after(90):
                while req is None:
                    req = next((r for r in await s.host_requests("h2") if r.id not in before and r.body == body),
                               None)
                    await anyio.sleep(0.5)
            assert req.id.startswith("h2/beta-") and req.asker == "h2/codex:beta" and req.to == "h2/claude:alpha"
            assert req.verdict == "verified" and req.hop == 1, req
            n = len(gate.shown)
            d = await s.approve_request(req.id, wait=90, timeout=60)
            assert d.outcome == "delivered" and d.target.startswith("h2/claude:alpha"), d.summary()
            plans = gate.shown[n:]
            send = next(p for p in plans if p.target.startswith("h2/claude:alpha") and p.heading)
            assert send.heading.startswith(f"request {req.id.split('/', 1)[1]} from codex:beta [verified]")
            assert f"codex:beta (verified) wrote: «{body}»" in send.payload
            assert "route: via ssh h2" in send.render()
            back = plans[-1]
            rid = req.id.split("/", 1)[1]
            assert back.target.startswith("h2/codex:beta") and f"re={rid}" in back.payload, back.render()
            host = RequestStore(Ledger(home / "ledger.sqlite"))
            kept = host.get(rid)
            assert [h.state for h in kept.history] == ["held", "approved", "delivered"], kept
            assert kept.answer_id and kept.answer_from == "claude:alpha"
            with anyio.fail_after(60):
                while not files_hold(home, f"re={rid}"):
                    await anyio.sleep(0.5)
        finally:
            await s.sender.remote.aclose()
