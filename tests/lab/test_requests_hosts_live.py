"""Live: an agent on the second host asks, the operator here decides in a real terminal (issue 31
across hosts), through `relay lab up --hosts 2`.

The operator's REPL runs in a tmux pane (`relay --lab`). `await session.host_requests("h2")` opens
h2's inbox (its `relay serve` session). h2's real Codex (h2/codex:beta), prompted in its own pane on
h2, calls relay_send for `local/claude:alpha` (this machine's Claude) on the relay MCP server its
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


def rollouts_hold(root: Path, text: str) -> bool:
    return any(text in p.read_text(errors="replace") for p in root.rglob("rollout-*.jsonl") if p.is_file())


def test_h2s_codex_asks_this_machines_claude_and_the_answer_goes_back_to_h2(lab2):  # noqa: F811
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
        body = f"please compute 6*7 from h2 {int(time.time())}"
        prompt_on_h2(home, "beta", f"ask local/claude:alpha via relay (want=reply): {body}")
        # nothing typed from here: the REPL takes h2's requests by itself and shows each as it arrives
        pattern = (r"request (h2/beta-\d+) from h2/codex:beta \[host h2 says: verified\]: send to "
                   r"claude:alpha \(want=reply, hop (\d)\)")
        screen.wait_for(lambda s: re.search(pattern, s) is not None, timeout=150)
        found = re.search(pattern, screen.text())
        assert found, screen.text()[-3000:]
        key, rid = found.group(1), found.group(1).split("/", 1)[1]
        n = screen.text().count("Proceed? [y/N]")
        screen.type_line(f"d = await session.approve_request({key!r}, wait=120)")
        plan = screen.wait_for(lambda s: s.count("Proceed? [y/N]") > n, timeout=90)
        assert f"request {key} from h2/codex:beta [host h2 says: verified]" in plan
        flat = plan.replace("\n", " ")
        assert "h2/codex:beta (host h2 says: verified) wrote: «" in flat and body[:30] in flat, plan[-3000:]
        screen.keys("y", "Enter")
        second = screen.wait_for(lambda s: s.count("Proceed? [y/N]") > n + 1, timeout=180)
        assert f"answer to request {key} from claude:alpha [verified]" in second, second[-3000:]
        assert "route: via ssh h2" in second[second.rfind("answer to request"):] and f"re={rid}" in second
        screen.keys("y", "Enter")
        screen.type_line("print('STATE', session.request(%r).state, session.request(%r).answer_state)" % (key, key))
        screen.wait_for(lambda s: re.search(r"STATE delivered (in_turn|delivered|replied)", s) is not None,
                        timeout=120)
        end = time.monotonic() + 90
        while not rollouts_hold(home, f"re={rid}") and time.monotonic() < end:
            time.sleep(0.5)  # the poll interval of this bounded wait
        assert rollouts_hold(home, f"re={rid}"), "the answer is in beta's rollout on h2"
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
            assert not [e for e in mine.events() if e.kind == "host-claim"]
        finally:
            mine.close()
    finally:
        screen.close()
