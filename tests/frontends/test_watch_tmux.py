"""`relay watch` in a real terminal (tmux), beside a process that sends through the in-memory
transport: every ledger event and inbox message of each send shows in the view as it lands,
the deliveries table moves to its final state, Enter opens the debugger (read-only), q quits.
The lab version, beside five-rounds on the real clients, is tests/frontends/test_watch_live.py."""

from __future__ import annotations

import shutil
import sys

import anyio
import pytest

from relay_repl.core.delivery import DeliveryState
from relay_repl.session.app import make_session
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport
from tests.support.tmuxdrive import Screen, python_env
from tests.support.watching import ScreenLog


class Slow(InMemoryTransport):
    """Stages a quarter of a second apart, so each shows on its own."""

    name = "memory"

    async def send(self, d, target, payload, log, *, approval=None):
        await anyio.sleep(0.25)
        await super().send(d, target, payload, log, approval=approval)

    async def confirm(self, d, target, payload, log, timeout):
        await anyio.sleep(0.25)
        log("confirm", DeliveryState.IN_TURN, "payload found verbatim in the in-memory inbox")


def test_watch_shows_each_event_as_it_lands_and_opens_the_debugger(relay_home):
    if shutil.which("tmux") is None:
        pytest.skip("tmux not installed")
    relay_home.mkdir(parents=True)
    cmd = f"{sys.executable} -m relay_repl --fake watch; echo EXIT=$?; sleep 60"
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home), TERM="xterm-256color"),
                    width=280, height=60)
    try:
        screen.wait_for("HELD AGENT REQUESTS", timeout=30)
        screen.wait_for("fake:inbox", timeout=30)  # discovery ran
        assert "none held (an agent asks with relay_send" in screen.text()

        async def sends() -> None:
            s = make_session(fake=True, discover=False, approve=ScriptedGate([True] * 3), echo=None)
            s.transports["memory"] = Slow()
            for body in ("one", "two", "three"):
                d = await s.send("fake:inbox", body)
                s.ledger.add_inbox(f"[relay/1 from=peer:fake@inbox to=operator id=inbox-{body} hop=1 want=none "
                                   f"re={d.relay_id}] got {body} \u202e", origin={}, relay_id=f"inbox-{body}",
                                   peer="peer:fake@inbox", answers=d.relay_id)
                await anyio.sleep(0.3)

        with ScreenLog(screen.pane) as log:
            anyio.run(sends)
            led = Ledger.read_only_at(relay_home / "ledger.sqlite")
            events, inbox = led.events(), led.inbox()
            screen.wait_for(f"inbox #{inbox[-1].seq} ", timeout=15)
        missing = log.late(events, inbox, bound=10.0)
        assert not missing, missing
        text = screen.text()
        assert "\u202e" not in text and "got three ⟨U+202E⟩" in text
        for d in [e for e in events if e.kind == "delivery"]:
            assert f"{d.data['relay_id']}" in text
        assert "0 in flight" in text
        screen.keys("Enter")
        text = screen.wait_for("look: ", timeout=30)
        assert "DEBUGGER" in text and "read-only" in text and "next: nothing (the delivery is finished)" in text
        after = Ledger.read_only_at(relay_home / "ledger.sqlite").events()
        assert [e.seq for e in after] == [e.seq for e in events]  # the view recorded nothing
        screen.keys("Escape")
        screen.wait_for(lambda t: "DEBUGGER" not in t, timeout=10)
        screen.keys("q")
        assert "EXIT=0" in screen.wait_for("EXIT=", timeout=10)
        print(f"watch: {len(events)} events, {len(inbox)} inbox, delays {sorted(log.delays(events, inbox))[-3:]}")
    finally:
        screen.close()


def test_watch_without_a_terminal_says_what_to_use_instead(relay_home):
    import subprocess

    res = subprocess.run([sys.executable, "-m", "relay_repl", "watch"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 2 and "needs a terminal" in res.stderr and "relay log --follow" in res.stderr


def test_session_watch_in_the_repl_opens_the_view_and_q_returns_to_the_prompt(repl):
    before = repl.text().count(">>>")
    repl.type_line("await session.watch()")
    text = repl.wait_for("HELD AGENT REQUESTS", timeout=30)
    assert "DELIVERIES" in text and "INBOX" in text
    repl.keys("q")
    repl.wait_for(lambda t: t.count(">>>") > before, timeout=15)
    repl.type_line("1 + 1")
    repl.wait_for("\n2", timeout=15)
