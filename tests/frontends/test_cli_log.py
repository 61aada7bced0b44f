"""`relay log --follow` (a stream, read-only, JSON only on stdout) and `relay log --diagram`
(the SVG of a run or a relay id, never replacing a file unasked)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from relay_repl.store.ledger import Ledger
from tests.session.test_runner import TWO, mk, write


def relay(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, **kw)


def read_line(proc: subprocess.Popen, timeout: float = 10.0) -> str:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    assert sel.select(timeout), "no line from relay log --follow"
    return proc.stdout.readline()


def test_follow_streams_new_events_and_inbox_messages_as_json_lines(relay_home):
    relay_home.mkdir(parents=True)
    led = Ledger(relay_home / "ledger.sqlite")
    led.event("plan", relay_id="old-1", data={"target": "x"})
    proc = subprocess.Popen([sys.executable, "-m", "relay_repl", "log", "--follow", "--json", "-n", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        first = json.loads(read_line(proc))
        assert first["relay_id"] == "old-1"
        time.sleep(0.3)  # the follower is waiting now: what follows is new
        led.event("stage:write", relay_id="new-1", data={"state": "queued", "detail": "in"})
        got = json.loads(read_line(proc))
        assert (got["kind"], got["relay_id"], got["data"]["state"]) == ("stage:write", "new-1", "queued")
        led.add_inbox("[relay/1 from=peer:x@y to=operator id=y-1 hop=1 want=none re=new-1] hi \u202e\x1b[2J",
                      origin={"verifiedPeerPid": 5}, relay_id="y-1", peer="peer:x@y", answers="new-1")
        got = json.loads(read_line(proc))
        assert got["kind"] == "inbox" and got["answers"] == "new-1" and got["line"].endswith("hi \u202e\x1b[2J")
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    for line in out.splitlines():  # whatever else came: JSON only
        json.loads(line)
    assert "following the ledger" in err
    names = sorted(os.listdir(relay_home))
    assert names == ["ledger.sqlite", "ledger.sqlite-shm", "ledger.sqlite-wal"]  # the writer's own; none of ours


def test_follow_without_json_neutralises_a_peer_line(relay_home):
    relay_home.mkdir(parents=True)
    led = Ledger(relay_home / "ledger.sqlite")
    led.add_inbox("evil \u202e\x1b[2J", origin={}, relay_id=None, peer="p")
    led.event("plan", relay_id="a-1", data={})
    proc = subprocess.Popen([sys.executable, "-m", "relay_repl", "log", "-f", "-n", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        read_line(proc)
        led.add_inbox("again \u202e\x1b[2J", origin={}, relay_id=None, peer="p")
        line = read_line(proc)
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert "inbox" in line and "again ⟨U+202E⟩\\x1b[2J" in line and "\x1b" not in line and "\u202e" not in line


@pytest.mark.anyio
async def test_diagram_writes_an_svg_of_a_run_and_never_replaces_a_file_unasked(relay_home, tmp_path):
    relay_home.mkdir(parents=True)
    s, rep, gate, led, lines = mk(tmp_path, [True] * 4, led=Ledger(relay_home / "ledger.sqlite"))
    run = await s.run(write(tmp_path, TWO.format(rounds=2)))
    out = tmp_path / "run.svg"
    res = relay("log", "--diagram", run.id, "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"wrote {out}: 3 lifelines, 8 messages"
    root = ET.parse(out).getroot()
    assert len(root.findall(".//{http://www.w3.org/2000/svg}g[@class='lifeline']")) == 3
    before = out.read_bytes()
    res = relay("log", "--diagram", run.id, "-o", str(out))
    assert res.returncode == 2 and "exists: nothing was written; give --force" in res.stderr
    assert out.read_bytes() == before
    res = relay("log", "--diagram", run.id, "-o", str(out), "--force", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["messages"] == 8
    one = relay("log", "--diagram", run.steps[0].relay_id, "-o", "-")
    assert one.returncode == 0 and one.stdout.startswith("<?xml")
    assert len(ET.fromstring(one.stdout.encode()).findall(".//{http://www.w3.org/2000/svg}g[@class='lifeline']")) == 2
    res = relay("log", "--diagram", "nobody-9", "-o", str(tmp_path / "x.svg"))
    assert res.returncode != 0 and res.stderr.count("\n") == 1 and "no run or relay id 'nobody-9'" in res.stderr
    assert not (tmp_path / "x.svg").exists()


def test_a_recipe_runs_report_embeds_its_exchange(relay_home, tmp_path):
    where = tmp_path / "report"
    res = relay("--fake", "run", "ping", "-p", "target=fake:inbox", "--report", str(where))
    assert res.returncode == 1  # no terminal: answered No, the run withheld
    report = (where / "report.md").read_text()
    assert "![sequence diagram of the exchange](exchange.svg)" in report and "- state: withheld" in report
    svg = (where / "exchange.svg").read_text()
    assert svg.count('class="message refused"') == 1 and 'class="mark run-end"' in svg
    assert "✕ operator." in svg and "withheld" in svg


def test_json_output_carries_a_peers_c1_control_and_bidi_override_escaped(relay_home, capsys):
    """`--json` of log, requests, halts and dead printed peer text with ensure_ascii=False: json escapes
    only C0 controls, so U+009B (a C1 CSI) and U+202E reached the terminal raw."""
    from relay_repl.core.request import Request
    from relay_repl.frontends import cli
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.requests import RequestStore

    evil = "hi \u009b2J \u202eevil"
    led = Ledger.default()
    led.add_inbox(f"[relay/1 from=agent:x@y to=operator id=y-1 hop=1 want=none] {evil}", origin={}, relay_id="y-1",
                  peer="agent:x@y")
    led.halt(f"peer says {evil}", by="agent:x@y")
    RequestStore(led).add(Request.held(id="y-2", asker="codex:beta", verdict="verified", evidence="pid 7",
                                       asker_pid=7, to="claude:alpha", body=evil, want="none", hop=0, line="l"))
    led.close()
    for argv in (["log", "--json"], ["requests", "--json"], ["halts", "--json"]):
        assert cli.main(argv) == 0, argv
        out = capsys.readouterr().out
        assert out and "\u009b" not in out and "\u202e" not in out, (argv, out)
        assert evil in json.dumps([json.loads(ln) for ln in out.splitlines()], ensure_ascii=False), argv  # escaped
