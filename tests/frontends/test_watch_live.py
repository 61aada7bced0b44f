"""Live (issue 34): `relay watch` in one tmux pane while `relay run five-rounds` runs in another,
against the lab's real Claude Code and Codex, answered `y` then Enter at each prompt.

- The view shows every ledger event of the run (each step's delivery moving through its
  states: plan, answer, each stage, outcome) and every reply arriving in the inbox, each within
  1 s of the ledger row being written (read from pane captures every 50 ms).
- In round 3, Codex's lab agent is scripted (a stub rule for that step's relay id, added when
  its plan is shown) to answer by `relay reply` with `<script>` and U+202E: a real peer reply.
- The run's report (`--report DIR`) embeds its SVG sequence diagram: 3 lifelines, one arrow per
  message (10 asks, 10 replies), the hostile reply neutralised and escaped; headless Chromium
  renders it and the screenshot shows 3 lifelines and 20 arrows.

Not here: "a held request approved from it reaches its receiver": tests/frontends/test_watch_requests_live.py
(a lab agent asks while `relay watch` runs; `a`, the plan, y then Enter; the payload in the receiver's transcript).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.core.sequence_svg import ARROW_COLOURS, LIFELINE
from relay_repl.lab.stubs.client import SyncStubClient
from relay_repl.session.core.gate import PROMPT
from relay_repl.store.ledger import Ledger
from tests.support.browser import chromium, screenshot
from tests.support.png import horizontal_lines, read_png, vertical_lines
from tests.support.tmuxdrive import Screen
from tests.support.watching import ScreenLog

pytestmark = pytest.mark.live

EVIL = "<script>alert(1)</script> \u202eevil"
BOUND = 1.0  # the bound: shown within 1 s of the ledger event


class Pane(Screen):
    """A second pane of a Screen's window (closing the Screen closes it)."""

    def __init__(self, pane) -> None:  # noqa: D107 - a view on an existing pane
        self.pane = pane

    def text(self) -> str:
        return "\n".join(self.pane.capture_pane(start=-5000, end="-", join_wrapped=True))


def test_watch_shows_five_rounds_as_it_happens_and_the_run_is_drawn(lab, tmp_path):
    env = dict(os.environ, TERM="xterm-256color")
    watch = Screen(["sh", "-c", f"{sys.executable} -m relay_repl watch; echo WATCH=$?; sleep 600"], env,
                   width=320, height=80)
    report = tmp_path / "report"
    stub = SyncStubClient(lab.stub.control)
    try:
        watch.wait_for("HELD AGENT REQUESTS", timeout=60)
        assert "none held (an agent asks with relay_send" in watch.text()
        watch.wait_for("claude:alpha", timeout=60)  # discovery ran
        led = Ledger.default()
        start_seq, start_inbox = led.last_event_seq(), led.last_inbox_seq()
        cmd = (f"env {' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())} {sys.executable} -m relay_repl run "
               f"five-rounds -p a=claude:alpha -p b=codex:beta --report {shlex.quote(str(report))}; "
               "echo RC=$?; sleep 600")
        run_pane = Pane(watch.session.active_window.split(direction=_right(), shell=cmd, size="45%"))
        answered = 0
        evil_id = None
        with ScreenLog(watch.pane, look_for=("⟨U+202E⟩evil",)) as log:
            while True:  # the inbox listing, then 2 asks in each of 5 rounds, answered as they appear
                text = run_pane.wait_for(
                    lambda t, n=answered + 1: "RC=" in t or PROMPT in "".join(t.split("\nPlan: ")[n:n + 1]),
                    timeout=180)
                if "RC=" in text:
                    break
                plan = text.split("\nPlan: ")[answered + 1]
                if "round 3/5, step 2: ask codex:beta" in text.split("\nPlan: ")[answered] and evil_id is None:
                    evil_id = re.search(r"\(relay id (\S+)\)", plan).group(1)
                    reply = f"relay reply {shlex.quote(evil_id)} {shlex.quote(EVIL)}"
                    stub.add_rule("beta", {"match": re.escape(evil_id), "once": True, "steps": [
                        {"tool": {"name": "exec_command", "input": {"cmd": reply, "yield_time_ms": 30000}}},
                        {"text": "sent"}]})
                assert answered < 11, f"more prompts than the listing and ten asks:\n{text}"
                run_pane.keys("y", "Enter")
                answered += 1
            led = Ledger.read_only_at(led.path)
            events = led.events(since=start_seq)
            inbox = led.inbox(since=start_inbox)
            # the run's last event is Codex's own `reply` row, committed just after run-end: seen here, it is
            # seen by the log too (its closing capture), whichever of the two threads looked last
            watch.wait_for(f"#{events[-1].seq} ", timeout=10)
        assert "RC=0" in text and answered == 11, text
        assert re.search(r"<Run run-[0-9a-f]{8} five-rounds: done, round 5/5", text), text
        assert evil_id is not None
        run_id = re.search(r"<Run (run-[0-9a-f]{8}) ", text).group(1)
        steps = [e.data["relay_id"] for e in led.events(relay_id=run_id, kind="run-step")]
        assert len(steps) == 10
        stages = [e for e in events if e.kind.startswith("stage:") or e.kind == "outcome"]
        assert {e.relay_id for e in stages} >= set(steps)
        answers = [m for m in inbox if m.answers in steps]
        assert len(answers) == 10 and any(EVIL in m.body for m in answers)
        late = log.late(events, inbox, BOUND)
        delays = sorted(log.delays(events, inbox))
        gaps = [b.at - a.at for a, b in zip(log.frames, log.frames[1:])]
        print(f"watch: {len(events)} events, {len(inbox)} inbox rows, {log.captures} captures (widest gap "
              f"{max(gaps):.3f}s); delay median {delays[len(delays) // 2]:.3f}s, max {delays[-1]:.3f}s; "
              f"load {os.getloadavg()}")
        assert not late, late
        shown = watch.text()
        table = shown.split("DELIVERIES", 1)[1].split("HELD AGENT REQUESTS", 1)[0].splitlines()
        for rid in steps:  # each step's delivery ends in the table as replied, with its answer
            row = [x for x in table if f"{rid} " in x]
            assert len(row) == 1 and " replied " in row[0] and "answer " in row[0], (rid, table)
        assert "⟨U+202E⟩evil" in log.found and not log.forbidden_seen  # the hostile reply was shown, neutralised

        svg_text = (report / "exchange.svg").read_text()
        drawn = tmp_path / "drawn.svg"  # `relay log --diagram RUN` draws the same picture
        res = subprocess.run([sys.executable, "-m", "relay_repl", "log", "--diagram", run_id, "-o", str(drawn)],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert res.returncode == 0 and "3 lifelines, 20 messages" in res.stdout, res.stderr
        assert drawn.read_text() == svg_text
        assert "![sequence diagram of the exchange](exchange.svg)" in (report / "report.md").read_text()
        root = ET.fromstring(svg_text.encode())
        ns = "{http://www.w3.org/2000/svg}"
        assert len(root.findall(f".//{ns}g[@class='lifeline']")) == 3
        assert len(root.findall(f".//{ns}g[@class='message send']")) == 10
        assert len(root.findall(f".//{ns}g[@class='message reply']")) == 10
        names = [t.text for t in root.findall(f".//{ns}g[@class='lifeline']/{ns}text")]
        assert names == ["operator", "claude:alpha", "codex:beta"], names
        assert "<script" not in svg_text and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg_text
        assert "\u202e" not in svg_text and "⟨U+202E⟩evil" in svg_text
        if chromium() is None:
            pytest.fail("chromium is missing: ./scripts/bootstrap installs it (as root)")
        png = tmp_path / "shot.png"
        screenshot(report / "exchange.svg", png, int(root.get("width")), int(root.get("height")))
        img = read_png(png)
        assert vertical_lines(img, LIFELINE) == 3
        assert horizontal_lines(img, list(ARROW_COLOURS), min_run=150) == 20
        watch.keys("q")
        assert "WATCH=0" in watch.wait_for("WATCH=", timeout=15)
    finally:
        watch.close()
        for name in ("alpha", "beta"):
            helpers.wait_idle(name, timeout=90)


def _right():
    from libtmux.constants import PaneDirection

    return PaneDirection.Right
