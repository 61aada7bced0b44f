"""A send's plain plan parts for Gemini CLI (agents/gemini_cli/plain_plan.py, issue 40) against the models'.

Each case is a fake Gemini session (tests/frontends/test_targets_plain.GeminiWorld: a `node` whose argv
names Gemini's bundle, its chat file under our Gemini home) in a real tmux pane of the capture's size
that REDRAWS a recorded screen of the real client with its escapes and its cursor (the `.e.txt` and
`.json` of tests/agents/screens/captures/gemini-cli-0.61.0), so preflight's look reads the composer as
it read the real one (Gemini's reverse cursor cell at column 3 is what makes it `empty`). The models'
side is the session's own `preview` (discovery, ranking, TmuxTransport.before_asking and plan) for the
same relay id. Where the models would refuse before asking, the plain side must answer None (the send
then runs the models' path, which refuses in its own words).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from relay_repl.agents.gemini_cli import plain_plan
from relay_repl.system import pane_list
from relay_repl.system.pane_list import PlainRoster
from tests.frontends.test_targets_plain import BUNDLE, GEMINI_CAPTURES, GeminiWorld, gemini, world  # noqa: F401

SID = "0000-4000-8000-00000000000a"  # the chat's session id after the 8 hex the recorded footer shows (if any)
REDRAW = ("import json, signal, sys, time\n"
          "def draw(*_):\n"
          "    rows = open(sys.argv[2]).read().rstrip('\\n').split('\\n'); m = json.load(open(sys.argv[3]))\n"
          "    sys.stdout.write('\\x1b[H\\x1b[2J' + '\\x1b[0m\\r\\n'.join(rows) + "
          "'\\x1b[0m\\x1b[%d;%dH' % (m['cursor_y'] + 1, m['cursor_x'] + 1)); sys.stdout.flush()\n"
          "signal.signal(signal.SIGUSR1, draw); draw()\n"
          "while True: time.sleep(600)\n")
"""Draws the rows file (argv 2) with the cursor its .json (argv 3) gives; again on SIGUSR1 (`show`)."""


def footer_sid(capture: str | Path) -> str:
    """A session id whose first 8 hex are the ones the capture's footer shows (else 0a1b2c3d)."""
    from relay_repl.agents.gemini_cli.screen import footer_session
    from relay_repl.agents.screens.model import Snapshot

    text = (capture if isinstance(capture, Path) else GEMINI_CAPTURES / f"{capture}.txt").read_text()
    return f"{footer_session(Snapshot(lines=text.split(chr(10)))) or '0a1b2c3d'}-{SID}"


def redraw(g: GeminiWorld, capture: str | Path, *, sid: str | None = None) -> int:
    """A fake session in a pane of the capture's size redrawing it (rows, escapes, cursor), with a chat
    file of session `sid` (default: the one its footer shows); its pid. `capture` is a recorded
    capture's name or a text file (no escapes, cursor at 0,0)."""
    cwd = g.project("proj")
    if isinstance(capture, Path):
        meta = capture.with_suffix(".json")
        meta.write_text(json.dumps({"cursor_x": 0, "cursor_y": 0, "pane_width": 120, "pane_height": 40}))
        rows = capture
    else:  # copies: `show` replaces them to redraw the pane as another capture
        rows, meta = g.tmp / "screen.e.txt", g.tmp / "screen.json"
        shutil.copyfile(GEMINI_CAPTURES / f"{capture}.e.txt", rows)
        shutil.copyfile(GEMINI_CAPTURES / f"{capture}.json", meta)
    size = json.loads(meta.read_text())
    argv = [str(g.node), "-c", REDRAW, str(g.tmp / BUNDLE), str(rows), str(meta)]
    name = f"g{uuid.uuid4().hex[:6]}"
    cmd = " ".join(shlex.quote(a) for a in ["env", f"GEMINI_CLI_HOME={os.environ['GEMINI_CLI_HOME']}", *argv])
    subprocess.run(["tmux", "-L", g.sock, "new-session", "-d", "-s", name, "-x", str(size["pane_width"]),
                    "-y", str(size["pane_height"]), "-c", str(cwd), cmd], check=True)
    pane_pid = int(subprocess.run(["tmux", "-L", g.sock, "list-panes", "-t", name, "-F", "#{pane_pid}"],
                                  capture_output=True, text=True, check=True).stdout.split()[0])
    pid = g._running(pane_pid, lambda: g._gemini_under(pane_pid))
    g._running(pid, lambda: pid if g.screen_of(pid).strip() else None)
    g.chat("proj", sid or footer_sid(capture))
    return pid


def show(g: GeminiWorld, pid: int, capture: str) -> None:
    """Redraw the pane of the fake session `pid` (made by `redraw`) as another recorded capture."""
    import time

    before = g.screen_of(pid)
    shutil.copyfile(GEMINI_CAPTURES / f"{capture}.e.txt", g.tmp / "screen.e.txt")
    shutil.copyfile(GEMINI_CAPTURES / f"{capture}.json", g.tmp / "screen.json")
    os.kill(pid, signal.SIGUSR1)
    for _ in range(200):
        if g.screen_of(pid) != before:
            return
        time.sleep(0.01)
    raise AssertionError(f"the pane did not redraw as {capture}")


def send_for(line: str) -> Any:
    """The `send` the plain machinery hands a kind (pre40's contract): the line and the plain ranking."""
    from relay_repl.agents.plain_choice import chooser
    from relay_repl.agents.plain_facts import adapter

    return SimpleNamespace(line=line, relay_id="me-7", sender="operator:me", pid=os.getpid(), inbox_open=True,
                           interrupt=False, choose=chooser("gemini-cli", adapter("gemini-cli")))


def plain(via_listing: bool = True) -> tuple[Any, dict[str, Any] | None]:
    """(the row, plan_parts for it) on the plain path, listed through plain_plan.listing (the snapshot in the
    listing's capture) or plain_listing.listing (plan_parts takes its own)."""
    from relay_repl.agents.gemini_cli import plain_listing

    env = dict(os.environ)
    rows = (plain_plan.listing if via_listing else plain_listing.listing)(env, PlainRoster(env))
    assert rows is not None
    (row,) = rows
    return row, plain_plan.plan_parts(row, env, send_for(line()))


def line() -> str:
    """The envelope line of the send (as the machinery builds it: this process's sender, relay id me-7)."""
    from relay_repl.core.envelope_line import plain_line
    from relay_repl.session.core.whoami import own_sender

    got = plain_line(sender=own_sender(dict(os.environ)).sender, to="peer", id="me-7", hop=0, want="none", re=None,
                     body="hello gamma")
    assert got is not None
    return got


def models(spec: str) -> Any:
    """The plan the session's models build for the same send (relay id pinned), nothing sent or asked."""
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate
    from relay_repl.system import loopless

    s = make_session(approve=ScriptedGate([]), echo=None)
    return loopless.run(lambda: s.preview(spec, "hello gamma", relay_id="me-7"))


def kind_parts(plan: Any) -> dict[str, Any]:
    """The models' plan cut to what a kind's plan_parts answers (contract keys), for a send not refused."""
    notes = list(plan.notes)
    now = next(n for n in notes if n.startswith("pane "))
    i = notes.index(now)
    return {"transport": plan.transport, "fallback": plan.fallback, "choice_notes": tuple(notes[:i]),
            "payload": plan.payload, "delivered_when": plan.delivered_when, "now": now,
            "notes": tuple(notes[i + 1:]), "files": tuple(plan.files)}


ASKED = {"after_turn": "idle", "fresh": "idle", "busy": "busy", "busy_queued": "busy", "busy_tool": "busy",
         "yolo_busy": "busy", "yolo_fresh": "idle"}


@pytest.mark.parametrize("capture", sorted(ASKED))
def test_the_plain_parts_are_the_models_for_a_pane_a_send_may_type_into(capture, gemini):  # noqa: F811
    """Idle and busy screens with an empty composer: the same transport, fallback, payload, delivered
    line, preflight note and notes (the busy note on a busy one) as the models' plan. Old code: no
    plain plan for Gemini at all (every send built its plan through the models)."""
    redraw(gemini, capture)
    row, parts = plain()
    assert row.state == ASKED[capture]
    assert parts is not None
    want = kind_parts(models(f"gemini:{row.name}"))
    assert parts == want
    assert parts["now"] == f"pane {row.pane} now: {ASKED[capture]}, composer empty (preflight runs again after your y)"
    assert ("target is busy: Enter queues the line" in " ".join(parts["notes"])) == (ASKED[capture] == "busy")


REFUSED = {"approval_dialog": "screen shows dialog", "idle_draft": "screen shows draft", "shell_mode": "screen shows shell-mode",
           "slash_menu": "screen shows slash-menu", "shortcuts_overlay": "screen shows overlay",
           "mcp_wait_queued": "screen shows queue-held", "unfocused_empty": "screen shows composer-unknown"}


@pytest.mark.parametrize("capture", sorted(REFUSED))
def test_a_pane_preflight_refuses_is_left_to_the_models(capture, gemini):  # noqa: F811
    """Waiting (an approval box), a draft, shell mode, a menu, an overlay, a held queue, an unreadable
    composer: the models' plan says a send now would be refused before asking; the plain side answers
    None, so the send runs the models' path and refuses in their words."""
    redraw(gemini, capture)
    row, parts = plain()
    assert row.transports == ("tmux",) and parts is None
    assert (row.state == "waiting") == (capture == "approval_dialog")  # an approval box: the session waits
    plan = models(f"gemini:{row.name}")
    assert any(n.startswith(f"a send now would be refused before asking: {REFUSED[capture]}") for n in plan.notes), plan.notes


def test_a_screen_with_no_composer_is_left_to_the_models(gemini, tmp_path):  # noqa: F811
    """No composer recognised: preflight looks again a moment later before refusing (a capture taken
    mid-redraw), which only the models' path does; the plain side answers None."""
    odd = tmp_path / "odd.txt"
    odd.write_text("Welcome\n\nnothing here looks like Gemini's composer\n")
    redraw(gemini, odd)
    row, parts = plain()
    assert row.transports == ("tmux",) and parts is None
    plan = models(f"gemini:{row.name}")
    assert any("no-composer" in n for n in plan.notes if n.startswith("a send now would be refused")), plan.notes


def test_a_footer_showing_another_session_is_left_to_the_models(gemini):  # noqa: F811
    """The chat file is tied by start time but the footer shows another session (a /clear or /resume):
    the roster rule refuses before asking, so the plain side answers None."""
    redraw(gemini, "fresh", sid="0a1b2c3d-0000-4000-8000-00000000000b")
    row, parts = plain()
    assert row.transports == ("tmux",) and parts is None
    plan = models(f"gemini:{row.name}")
    assert any("roster mismatch: the footer of pane" in n for n in plan.notes), plan.notes


def tmux_calls(monkeypatch: Any) -> list[list[str]]:
    """The argument lists of every tmux call made from here on (each call still runs)."""
    calls: list[list[str]] = []
    real = pane_list.run_tmux

    def counted(socket_path: str, args: list[str], env: Any) -> str | None:
        calls.append(args)
        return real(socket_path, args, env)

    monkeypatch.setattr(pane_list, "run_tmux", counted)
    return calls


def test_one_capture_identifies_the_session_and_looks_at_its_pane(gemini, monkeypatch):  # noqa: F811
    """Before the plan, tmux is asked twice: list-panes, then ONE capture that gives the footer (the
    session's identity) and preflight's snapshot (today's path: list-panes, the listing's capture,
    locate's display-message and the snapshot: four). Listed by plain_listing.listing instead, plan_parts
    takes its own snapshot (three), and answers the same."""
    redraw(gemini, "after_turn")
    calls = tmux_calls(monkeypatch)
    _, once = plain()
    captures = [a for a in calls if a[0] != "list-panes"]  # list-panes: one per server there is
    assert len(captures) == 1 and "-J" in captures[0] and "-e" in captures[0], calls
    calls.clear()
    _, twice = plain(via_listing=False)
    assert len([a for a in calls if a[0] != "list-panes"]) == 2 and once == twice and once is not None


def test_a_pane_gone_after_the_listing_is_left_to_the_models(gemini):  # noqa: F811
    """The snapshot cannot be taken (the pane closed between listing and look): None, never a guess."""
    pid = redraw(gemini, "after_turn")
    from relay_repl.agents.gemini_cli import plain_listing

    env = dict(os.environ)
    (row,) = plain_listing.listing(env, PlainRoster(env)) or []
    subprocess.run(["tmux", "-L", gemini.sock, "kill-pane", "-t", row.pane], check=True)
    assert plain_plan.plan_parts(row, env, send_for(line())) is None
    assert pid


PROBE = """
import json, os, sys
from types import SimpleNamespace
from relay_repl.system.prefetch import load_by_file
from relay_repl.system.pane_list import PlainRoster
env = dict(os.environ)
plan = load_by_file("gemini-cli", "relay_repl.agents.gemini_cli.plain_plan", "relay_repl.plain_plan")
choice = load_by_file("plain-choice", "relay_repl.agents.plain_choice", "relay_repl.plain_plan")
facts = load_by_file("plain-facts", "relay_repl.agents.plain_facts", "relay_repl.plain_plan")
(row,) = plan.listing(env, PlainRoster(env))
send = SimpleNamespace(line=sys.argv[1], relay_id="me-7", sender="x", pid=os.getpid(), inbox_open=True, interrupt=False,
                       choose=choice.chooser("gemini-cli", facts.adapter("gemini-cli")))
parts = plan.plan_parts(row, env, send)
print(json.dumps(parts))
print("MODULES " + repr(sorted(sys.modules)), file=sys.stderr)
"""
NOT_ON_THE_PLAIN_PATH = {"pydantic", "pydantic_core", "libtmux", "asyncio", "anyio", "relay_repl.agents",
                         "relay_repl.core.target", "relay_repl.transports", "dataclasses", "subprocess"}


def test_the_plain_parts_import_neither_pydantic_nor_asyncio_anyio_libtmux(gemini):  # noqa: F811
    """Loaded by file as the machinery loads it, the listing and plan_parts for a busy Gemini session
    load no pydantic, asyncio, anyio, libtmux, agents package, transports, dataclasses or subprocess
    (tmux through posix_spawn). Old code: no such module."""
    import ast
    import sys

    redraw(gemini, "busy")
    cp = subprocess.run([sys.executable, "-c", PROBE, line()], env=dict(os.environ), capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 0, cp.stderr
    parts = json.loads(cp.stdout)
    assert parts is not None and parts["now"].endswith("now: busy, composer empty (preflight runs again after your y)")
    loaded = set(ast.literal_eval(next(ln for ln in cp.stderr.splitlines() if ln.startswith("MODULES "))
                                  .removeprefix("MODULES ")))
    assert any(m.endswith("gemini_cli_screen") for m in loaded), sorted(loaded)  # the classifier, by file
    assert NOT_ON_THE_PLAIN_PATH & loaded == set(), sorted(NOT_ON_THE_PLAIN_PATH & loaded)


@pytest.mark.parametrize("capture", ["after_turn", "busy"])
def test_relay_sends_plain_plan_is_the_models_plan_byte_for_byte(capture, gemini):  # noqa: F811
    """End to end through the machinery (frontends/send_plain.preplan): the plan printed before the
    models, its fields, digest and bytes, equal the plan the real pipeline asks about for the same
    relay id (tests/frontends/send_plain_helpers.same_plan: inbox open, gate says No)."""
    from tests.frontends.send_plain_helpers import same_plan

    redraw(gemini, capture)
    models("gemini:proj")  # the session creates the ledger, as a first `relay send` would
    fields = same_plan("gemini:proj", "hello gamma")
    assert fields["transport"] == "tmux" and "composer empty (preflight runs again after your y)" in fields["notes"][0]


def test_relay_send_to_a_pane_with_a_draft_is_the_models_refusal(gemini):  # noqa: F811
    """A draft in the composer: phase 1 prints nothing (no digest), and the models refuse before asking."""
    from tests.frontends.send_plain_helpers import plain_plan as phase_one

    redraw(gemini, "idle_draft")
    models("gemini:proj")
    pre, printed = phase_one("gemini:proj", "hello gamma")
    assert pre.digest is None and printed == ""


def test_a_pane_that_turned_busy_while_the_plan_was_shown_is_asked_about_as_it_is_now(gemini):  # noqa: F811
    """Phase 1 read the pane idle; before the models plan, the session turned busy. The models' plan
    (busy, with the busy note) differs from the one shown, so it is printed under the changed-plan line
    and that plan is the one asked about (answered No here: nothing typed). The same pane unchanged is
    asked about without a second plan (tests/frontends/test_send_plain.py's mechanism, on Gemini's parts)."""
    from prompt_toolkit.input import create_pipe_input

    from relay_repl.core.approval import plan_digest
    from relay_repl.session.core.preshown_gate import CHANGED
    from tests.frontends.send_plain_helpers import plain_plan as phase_one
    from tests.frontends.test_send_plain import _gate, _send_with

    pid = redraw(gemini, "after_turn")
    models("gemini:proj")
    pre, printed = phase_one("gemini:proj", "hi")
    assert pre.digest is not None and "now: idle, composer empty" in printed and "target is busy" not in printed
    with create_pipe_input() as pipe:
        gate, written = _gate(pre.digest, pipe, "n\r")
        d = _send_with(gate, "gemini:proj", pre.relay_id)
    assert CHANGED not in written and d.state.value == "withheld"  # unchanged: asked without a second plan

    pre, printed = phase_one("gemini:proj", "hi")
    assert pre.digest is not None and "now: idle" in printed
    show(gemini, pid, "busy")
    with create_pipe_input() as pipe:
        gate, written = _gate(pre.digest, pipe, "n\r")
        d = _send_with(gate, "gemini:proj", pre.relay_id)
    i = written.index(CHANGED)
    assert written[i + 1] == d.plan.render() and "now: busy, composer empty" in written[i + 1]
    assert "target is busy: Enter queues the line" in written[i + 1]
    assert plan_digest(d.plan) != pre.digest and d.relay_id == pre.relay_id and d.state.value == "withheld"


def test_relay_sends_phase_one_takes_one_capture_for_the_listing_and_preflight(gemini, monkeypatch):  # noqa: F811
    """Through the machinery itself (send_plain.preplan), Gemini's rows come from its hook module's
    `listing`, so one capture gives both the footer and preflight's snapshot (old code: the machinery
    called plain_listing.listing and plan_parts took a second capture)."""
    from tests.frontends.send_plain_helpers import plain_plan as phase_one

    redraw(gemini, "after_turn")
    models("gemini:proj")
    calls = tmux_calls(monkeypatch)
    pre, printed = phase_one("gemini:proj", "hello gamma")
    assert pre.digest is not None and printed.startswith("Plan: send to gemini:proj")
    assert len([a for a in calls if a[0] != "list-panes"]) == 1, calls
