"""Deciding a held agent request from `relay watch` (issue 34), in a real terminal (tmux), without
the lab: requests kept in the ledger by hand (as the inbox keeps an agent's), to the in-memory
target of `relay --fake watch`.

- `a` leaves the view, prints the ordinary four-part plan (the same heading `approve_request`
  shows) and the gate's prompt; only y then Enter sends; the view comes back showing the
  request's new state, and the ledger holds the send (plan, approval, stages) for it.
- A key press approves nothing: Enter alone at the plan sends nothing.
- `x` asks a reason (Esc keeps the request held); the denial reaches the request with that
  reason and nothing is sent.
The lab version (a real agent asks, the receiver's own files hold the payload) is
tests/frontends/test_watch_requests_live.py.
"""

from __future__ import annotations

import shutil
import sys
import time

import pytest

from relay_repl.core.request import Request
from relay_repl.session.core.gate import PROMPT
from relay_repl.store.ledger import Ledger
from relay_repl.store.requests import RequestStore
from relay_repl.system.polling import poll_until_sync
from tests.support.tmuxdrive import Screen, python_env
from tests.support.watching import ScreenLog


def held(rid: str, body: str) -> Request:
    return Request.held(id=rid, asker="codex:beta", verdict="verified", evidence="pid 1 (hand-made)", asker_pid=1,
                        to="fake:inbox", body=body, want="none", hop=1,
                        line=f"[relay/1 from=codex:beta@beta to=fake:inbox id={rid} hop=0 want=none] {body}")


def sent_for(led: Ledger, rid: str) -> list:
    """The ledger's events of the send made for request `rid` (its delivery), none when nothing was sent."""
    req = RequestStore(led).get(rid)
    return [] if req is None or not req.delivery_id else led.events(relay_id=req.delivery_id)


def test_a_held_request_is_approved_and_another_denied_from_the_view(relay_home):
    if shutil.which("tmux") is None:
        pytest.skip("tmux not installed")
    relay_home.mkdir(parents=True)
    path = relay_home / "ledger.sqlite"
    cmd = f"{sys.executable} -m relay_repl --fake watch; echo EXIT=$?; sleep 60"
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home), TERM="xterm-256color"),
                    width=260, height=60)
    led = Ledger(path)
    store = RequestStore(led)
    try:
        screen.wait_for("HELD AGENT REQUESTS", timeout=30)
        screen.wait_for("fake:inbox", timeout=30)
        with ScreenLog(screen.pane) as log:
            assert store.add(held("beta-1", "please compute 6*7"))
            at = led.events(relay_id="beta-1", kind="request")[-1].at
            screen.wait_for("> beta-1 ", timeout=10)
            poll_until_sync(lambda: log.held.get("beta-1"), timeout=5, interval=0.05)
        assert "a: approve the chosen (>) request" in screen.text()
        print(f"held request shown {log.held['beta-1'] - at:.3f}s after its ledger event")

        # Enter alone at the plan: nothing is sent (a key in the view approves nothing)
        screen.keys("a")
        plan = screen.wait_for(PROMPT, timeout=30)
        assert "request beta-1 from codex:beta [verified]: codex:beta's words for fake:inbox, hop 1" in plan
        for part in ("1 target", "2 transport", "3 payload", "4 delivered"):
            assert part in plan
        assert "codex:beta (verified) wrote: «please compute 6*7»" in plan
        screen.keys("Enter")
        text = screen.wait_for("·beta-1 ", timeout=30)  # back in the view: decided, with its state
        assert "HELD AGENT REQUESTS" in text and "denied (the operator answered No at the plan)" in text
        assert RequestStore(Ledger.read_only_at(path)).get("beta-1").state == "denied"
        assert not [e for e in sent_for(led, "beta-1") if e.kind.startswith("stage:")], "nothing was sent"

        # y then Enter: the ordinary send
        assert store.add(held("beta-2", "second ask"))
        screen.wait_for("> beta-2 ", timeout=10)
        screen.keys("a")
        # its own prompt, below its plan: beta-1's is still on the screen, and a y typed before the new prompt
        # is drawn is discarded as type-ahead (seen under load 14)
        screen.wait_for(lambda t: "wrote: «second ask»" in t and PROMPT in t.split("wrote: «second ask»")[-1],
                        timeout=30)
        screen.keys("y", "Enter")
        text = screen.wait_for(lambda t: "·beta-2 " in t and "HELD AGENT REQUESTS" in t, timeout=30)
        req = RequestStore(Ledger.read_only_at(path)).get("beta-2")
        assert req.state == "delivered" and req.delivery_id, req
        kinds = [e.kind for e in sent_for(led, "beta-2")]
        assert "answer" in kinds and "stage:confirm" in kinds, kinds
        screen.wait_for(f"·beta-2 ", timeout=10)
        screen.wait_for(lambda t: f"sent as {req.delivery_id}" in t, timeout=10)

        # x: a reason, then denied; Esc first keeps it held
        assert store.add(held("beta-3", "third ask"))
        screen.wait_for("> beta-3 ", timeout=10)
        screen.keys("x")
        screen.wait_for("reason for denying beta-3", timeout=30)
        time.sleep(0.5)  # a lone Esc is told from the start of a sequence by time: not inside the prompt's first
        screen.keys("Escape")  # reply from the terminal (its cursor position report), as a person is not
        screen.wait_for(lambda t: "> beta-3 " in t and "still held" in t, timeout=30)
        assert RequestStore(Ledger.read_only_at(path)).get("beta-3").state == "held"
        screen.keys("x")
        screen.wait_for(lambda t: t.count("reason for denying beta-3") >= 1 and "> beta-3 " not in t, timeout=30)
        screen.type_line("not now")
        screen.wait_for(lambda t: "·beta-3 " in t and "denied (not now)" in t, timeout=30)
        req = RequestStore(Ledger.read_only_at(path)).get("beta-3")
        assert req.state == "denied" and req.why == "not now" and not req.delivery_id
        assert not sent_for(led, "beta-3")
        screen.keys("q")
        assert "EXIT=0" in screen.wait_for("EXIT=", timeout=10)
    finally:
        screen.close()
        led.close()


def test_in_the_repl_a_decides_with_the_sessions_own_gate_and_q_returns_to_the_prompt(repl, relay_home):
    """`await session.watch()`: `a` approves through the REPL session's own gate (the plan, y then
    Enter) and the view comes back; q returns to the prompt, which still works."""
    led = Ledger(relay_home / "ledger.sqlite")
    try:
        before = repl.text().count(">>>")
        repl.type_line("await session.watch()")
        repl.wait_for("HELD AGENT REQUESTS", timeout=30)
        assert RequestStore(led).add(held("beta-9", "from the repl's view"))
        repl.wait_for("> beta-9 ", timeout=10)
        repl.keys("a")
        plan = repl.wait_for(PROMPT, timeout=30)
        assert "codex:beta (verified) wrote: «from the repl's view»" in plan
        repl.keys("y", "Enter")
        repl.wait_for(lambda t: "·beta-9 " in t and "HELD AGENT REQUESTS" in t, timeout=30)
        req = RequestStore(Ledger.read_only_at(relay_home / "ledger.sqlite")).get("beta-9")
        assert req.state == "delivered" and req.delivery_id, req
        repl.keys("q")
        repl.wait_for(lambda t: t.count(">>>") > before, timeout=15)
        repl.type_line("print('STATE', session.request('beta-9').state)")
        repl.wait_for("STATE delivered", timeout=15)
    finally:
        led.close()
