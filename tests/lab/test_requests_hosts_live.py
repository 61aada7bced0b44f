"""Live: an agent on the second host asks, the operator here decides in a real terminal (issue 31
across hosts), through `relay lab up --hosts 2`.

The operator's REPL runs in a tmux pane (`relay --lab`). `await session.host_requests("h2")` opens
h2's inbox (its `relay serve` session). h2's real Codex (h2/codex:beta), prompted in its own pane on
h2, calls relay_send for `local/claude:alpha` (this machine's Claude), or `claude:alpha` (h2's own), on
the relay MCP server its
client runs there; h2's inbox establishes it by h2's kernel and keeps a copy. The REPL takes it up
the channel and holds it as `h2/beta-N`, asked by h2/codex:beta [host h2 says: verified]. y on the
plan: this machine's real Claude gets the quoted words; its answer, verified here, goes back to
h2/codex:beta after a second y, as a checked HOST/ send carrying `re=beta-N`, found in beta's
rollout on h2. The asker's copy on h2 (what its relay_request_status reads) went held -> approved ->
delivered, each state written there by this relay.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from relay_repl.lab.second_host import sub_lab_env
from tests.lab.test_hosts_live import lab2, lab_home  # noqa: F401 - the lab plus its second host
from tests.support.tmuxdrive import Screen

pytestmark = [pytest.mark.live, pytest.mark.timeout(900)]

PROMPT = ("import sys, relay_repl.lab.helpers as h; h.wait_idle(sys.argv[1], timeout=90); "
          "h.submit(sys.argv[1], sys.argv[2])")


def prompt_on_h2(home: Path, name: str, text: str) -> None:
    """Type `text` into session `name`'s pane on the second host (its own lab, its own tmux server)."""
    res = subprocess.run([sys.executable, "-c", PROMPT, name, text], env=sub_lab_env(home), capture_output=True,
                         text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr


def answer_each_plan(screen: Screen, line: str, marker: str, timeout: float = 300) -> str:
    """Type `line` in the REPL, then y for each plan it shows, until `marker` is printed; the screen."""
    answered = screen.text().count("Proceed? [y/N]")
    screen.type_line(line)
    end = time.monotonic() + timeout
    while marker not in screen.text() and time.monotonic() < end:
        if screen.text().count("Proceed? [y/N]") > answered:
            answered += 1
            screen.keys("y", "Enter")
        time.sleep(0.3)  # the poll interval of this bounded wait
    return screen.text()


def rollouts_hold(root: Path, text: str) -> bool:
    return any(text in p.read_text(errors="replace") for p in root.rglob("rollout-*.jsonl") if p.is_file())


@pytest.mark.parametrize("to, target, answerer", [
    ("local/claude:alpha", "claude:alpha", "claude:alpha [verified]"),  # this machine's Claude
    ("claude:alpha", "h2/claude:alpha", "h2/claude:alpha [host h2 says: verified]"),  # h2's own Claude
])
def test_h2s_codex_asks_and_the_answer_goes_back_to_h2(lab2, to, target, answerer):  # noqa: F811
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.requests import RequestStore

    home = Path(lab2.home)
    screen = Screen([sys.executable, "-m", "relay_repl", "--lab"], dict(os.environ, TERM="xterm-256color"))
    try:
        screen.wait_for(lambda s: "claude:alpha" in s and ">>>" in s, timeout=90)
        screen.type_line("ok = await session.register_inbox()")  # this machine's Claude answers to the REPL
        screen.wait_for("Proceed? [y/N]", timeout=30)
        screen.keys("y", "Enter")
        screen.type_line('print("OPENED", list(await session.host_requests("h2")))')  # h2's inbox listens now
        screen.wait_for("OPENED [", timeout=90)
        # a new exchange with the asker (hop 0): its request carries hop 1 whatever an earlier test sent it
        fresh = answer_each_plan(screen, 'print("FRESH", (await session.send("h2/codex:beta", "a new exchange '
                                 'starts here")).outcome)', "FRESH ", timeout=120)
        assert "FRESH delivered" in fresh, fresh[-3000:]
        body = f"please compute 6*7 from h2 {int(time.time())}"
        prompt_on_h2(home, "beta", f"ask {to} via relay (want=reply): {body}")
        # nothing typed from here: the REPL takes h2's requests by itself and shows each as it arrives
        pattern = (r"request (h2/beta-\d+) from h2/codex:beta \[host h2 says: verified\]: send to "
                   + re.escape(target) + r" \(want=reply, hop 1\)")
        screen.wait_for(lambda s: re.search(pattern, s) is not None, timeout=150)
        found = re.search(pattern, screen.text())
        assert found, screen.text()[-3000:]
        key, rid = found.group(1), found.group(1).split("/", 1)[1]
        text = answer_each_plan(screen, f"print('DONE', (await session.approve_request({key!r}, wait=120)).outcome, "
                                        f"session.request({key!r}).state, session.request({key!r}).answer_state)",
                                "DONE ")
        done = re.search(r"DONE (\w+) (\w+) (\w+)", text)
        assert done and done.group(1) == "delivered" and done.group(2) == "delivered", text[-4000:]
        flat = text.replace("\n", " ")
        assert f"request {key} from h2/codex:beta [host h2 says: verified]" in flat
        assert "h2/codex:beta (host h2 says: verified) wrote: «" in flat and body[:30] in flat, text[-4000:]
        assert f"answer to request {key} from {answerer}" in flat, text[-4000:]
        back = text[text.rfind(f"answer to request {key}:"):]
        assert "route: via ssh h2" in back and f"re={rid}" in back, back
        end = time.monotonic() + 90
        while not rollouts_hold(home, f"re={rid}") and time.monotonic() < end:
            time.sleep(0.5)  # the poll interval of this bounded wait
        assert rollouts_hold(home, f"re={rid}"), "the answer is in beta's rollout on h2"
        # the operator's relay tells h2 each change off its event loop, in order (session/remote/request_mirror.py):
        # the answer's change reaches h2's copy a moment after DONE is printed, never before delivered
        end = time.monotonic() + 30
        while time.monotonic() < end:
            host = Ledger(home / "ledger.sqlite")
            try:
                kept = RequestStore(host).get(rid)
            finally:
                host.close()
            if kept is not None and kept.answer_id:
                break
            time.sleep(0.2)  # the poll interval of this bounded wait
        host = Ledger(home / "ledger.sqlite")
        try:
            kept = RequestStore(host).get(rid)
            assert kept is not None and kept.asker == "codex:beta", kept
            assert [h.state for h in kept.history] == ["held", "approved", "delivered"], kept
            assert kept.answer_id and kept.answer_state
        finally:
            host.close()
        mine = Ledger.default()
        try:
            claimed = [e.data.get("line") for e in mine.events() if e.kind == "host-claim"]
            assert not claimed, claimed
        finally:
            mine.close()
    finally:
        screen.close()
