"""`relay run ping -p target=claude:NAME`'s first plan printed before the models (frontends/run_plain.py with
Claude's `inbox_listing_plan`, agents/claude_code/plain_plan.py, over peer_record.py), against the first plan the
models ask about for the same run: the inbox listing's (Runner._reply_route → register_inbox →
ClaudePeerRegistration), built from the values phase 1 drew (sessionId, the time, a socket name's suffix), pinned.

Over a real Claude registry (test_send_plain's ClaudeWorld: live `sleep` sessions with their procStart, records,
real listening sockets) and a stand-in `claude` answering `--version`: the same fields, digest and printed bytes
(the runner's line first), over two records with one name, the listener name taken, a dead process's record and
key at this pid's name; what phase 1 hands over (no live session with a socket, an unverified client, no client)
and that every refusal reads the same with the plain branch on and off; the modules phase 1 loads; and that the
gate, once the listing is approved, shows and asks the step's own plan as any gate does.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from relay_repl.core import run_words
from relay_repl.frontends import run_plain
from relay_repl.store.ledger import Ledger
from relay_repl.store.paths import ledger_path
from relay_repl.system.proc import proc_start
from tests.frontends.run_plain_helpers import models_run, phase_one_modules
from tests.frontends.send_plain_helpers import normalised
from tests.frontends import test_send_plain as send_plain_tests
from tests.frontends.test_send_cold import stand_in_claude
from tests.frontends.test_send_plain import world  # noqa: F401 - the fixture

REPO = Path(__file__).parents[2]
LINE = run_words.listing_first("Claude Code")


@pytest.fixture
def claude(world, tmp_path, monkeypatch):  # noqa: F811 - the fixture imported above
    """The world with a stand-in `claude` on PATH answering `--version` as the pinned client does."""
    exe = stand_in_claude(tmp_path)
    monkeypatch.setenv("PATH", f"{exe.parent}:/usr/bin:/bin")
    world.exe = exe
    return world


def plain(target: str = "claude:alpha") -> tuple[run_plain.RunPlan, str]:
    out = io.StringIO()
    pre = run_plain.preplan("ping", "target", target, dict(os.environ), out)
    return pre, out.getvalue()


def models(target: str, pre: run_plain.RunPlan | None, gate: Any = None) -> tuple[Any, list[str], Any]:
    """(the first plan the models ask about for `relay run ping -p target=TARGET` with phase 1's pins, what the
    run said before it, the session). The gate says No unless `gate` is given."""
    return models_run("ping", {"target": target}, pre.run_id if pre else None, None,
                      listing=pre.listing if pre else None, gate=gate)


def same_listing_plan(target: str = "claude:alpha") -> dict[str, Any]:
    """Phase 1's first plan asserted equal (fields, digest, printed bytes: the runner's line, then the plan) to
    the models' first plan for the same pins, the models saying nothing before it; its fields."""
    from relay_repl.core.approval import plan_digest

    pre, printed = plain(target)
    assert pre.fields is not None, "the plain path handed this run to the models"
    assert pre.run_id is not None and pre.relay_id is None and pre.listing is not None
    assert pre.listing["said"] is True
    plan, before, _ = models(target, pre)
    assert before == []  # the runner's line was phase 1's
    assert pre.fields == plan.model_dump(mode="json")
    assert pre.digest == plan_digest(plan)
    assert printed == LINE + "\n" + plan.render() + "\n"
    return pre.fields


def test_a_claude_runs_first_plan_is_the_inbox_listing_printed_as_the_models_print_it(claude):
    """Old code: phase 1 hands every Claude run to the models (no plan printed: `pre.fields` is None)."""
    alpha = claude.session("alpha")
    fields = same_listing_plan()
    assert fields["action"] == "list the operator inbox as a Claude peer"
    assert f"live session alpha (pid {alpha})" in fields["identified_by"]
    record = json.loads(fields["payload"])
    assert record["name"] == "relay-operator" and record["version"] == "2.1.332" and record["pid"] == os.getpid()
    assert record["messagingSocketPath"] == str(claude.socks / f"{os.getpid()}.sock")
    assert all(f.startswith("creates ") for f in fields["files"])


def test_two_records_with_one_name_and_the_operators_name_taken(claude):
    """Two live sessions named twin (alpha the newest with a socket: the anchor), one named relay-operator: the
    inbox is listed as relay-operator-<pid>, both ways."""
    claude.session("twin")
    claude.session("twin")
    claude.session("relay-operator")
    claude.session("alpha", startedAt=1_896_034_468_903)
    fields = same_listing_plan()
    assert json.loads(fields["payload"])["name"] == f"relay-operator-{os.getpid()}"
    assert "live session alpha" in fields["identified_by"]


def test_a_listener_name_already_taken_is_drawn_once_and_pinned(claude):
    """`<pid>.sock` taken in the anchor's socket directory: phase 1 draws the random suffix, the models use it
    (mutant: no `token` pin, so the models draw another name: the digests differ)."""
    claude.session("alpha")
    (claude.socks / f"{os.getpid()}.sock").touch()
    pre, _ = plain()
    assert re.fullmatch(r"[0-9a-f]{8}", pre.listing["pins"]["token"])
    fields = same_listing_plan()
    assert re.search(rf"/{os.getpid()}-[0-9a-f]{{8}}\.sock", json.loads(fields["payload"])["messagingSocketPath"])


def test_a_dead_processs_record_and_key_at_this_pids_name_are_named_as_replaced(claude):
    """A record and key file left at this pid's name (a dead process that had it): the plan says each is
    replaced, both ways."""
    claude.session("alpha")
    sessions = claude.cfg / "sessions"
    sock = claude.socks / f"{os.getpid()}.sock"
    (sessions / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(), "procStart": "1", "name": "old"}))
    key = sessions / f"{os.getpid()}.{hashlib.sha256(str(sock).encode()).hexdigest()}.key"
    key.write_text("{}")
    fields = same_listing_plan()
    assert fields["files"][0].startswith(f"replaces {sessions / f'{os.getpid()}.json'} (left there by a dead process")
    assert fields["files"][1].startswith(f"replaces {key} (left there by a dead process")


def test_what_phase_one_cannot_answer_exactly_is_the_models_with_nothing_printed(claude, monkeypatch):
    """No live session with a messaging socket (the models' DiscoveryError), an unverified client, no client on
    PATH, an unknown target: nothing printed, no pins."""
    claude.session("alpha", messagingSocketPath=None)
    for target in ("claude:alpha", "claude:nobody"):
        pre, printed = plain(target)
        assert printed == "" and pre.digest is None and pre.listing is None
    claude.session("beta")
    claude.exe.write_text("#!/bin/sh\necho '9.9.999 (Claude Code)'\n")
    pre, printed = plain("claude:beta")
    assert printed == "" and pre.digest is None
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    pre, printed = plain("claude:beta")
    assert printed == "" and pre.digest is None


def test_a_recipe_whose_later_step_waits_lists_the_inbox_first(claude):
    """A tell with want none, then an ask: the runner lists the inbox first, so phase 1 does too (before: phase 1
    printed the tell's plan, which the models then replaced with the listing's)."""
    claude.session("alpha")
    shelf = Path(os.environ["RELAY_HOME"]) / "recipes"
    shelf.mkdir(parents=True)
    (shelf / "later.toml").write_text('name = "later"\n\n[params.target]\ntype = "target"\n\n'
                                      '[[steps]]\nkind = "tell"\nto = "{target}"\nbody = "hello"\n\n'
                                      '[[steps]]\nkind = "ask"\nto = "{target}"\nbody = "one word?"\n')
    out = io.StringIO()
    pre = run_plain.preplan("later", "target", "claude:alpha", dict(os.environ), out)
    assert out.getvalue().startswith(LINE + "\nPlan: list the operator inbox as a Claude peer")
    assert pre.listing is not None


# -- the command, with the plain branch on (entry.main) and off (cli.main) --------------------------------------

ON = send_plain_tests.ON.replace("send_plain", "run_plain")  # the same trace of which way phase 1 went
OFF = send_plain_tests.OFF


def masked(text: str) -> str:
    """What differs by process and by draw: the pid, the run id, the record's sessionId and times."""
    text = normalised(text).replace(str(os.getpid()), "PID")
    text = re.sub(r"run-[0-9a-f]{8}", "run-ID", text)
    text = re.sub(r'"sessionId":"[0-9a-f-]{36}"', '"sessionId":"S"', text)
    text = re.sub(r'":\d{13}', '":T', text)
    text = re.sub(r'("pid":|pid ?)\d+', r"\1PID", text)  # the command's pid (and the anchor's: the same both ways)
    text = re.sub(r'"procStart":"\d+"', '"procStart":"P"', text)
    text = re.sub(r"\d+\.[0-9a-f\n ]+\.[\n ]*key\b", "PID.KEY.key", text)  # the key file's name (wrapped in the plan)
    text = re.sub(r"\d+\.json", "PID.json", text)  # no \b: flat, `write 4208.json` is `write4208.json`
    return re.sub(r"/\d+(-[0-9a-f]{8})?\.sock", "/PID.sock", text)


def relay(code: str, *words: str, env: dict[str, str] | None = None, flat: bool = False) -> tuple[int, str, str]:
    """The command's exit code and masked output; `flat`: its whitespace taken out before the masks, so a pid or
    a key file's name the plan's wrapping broke anywhere (between a pid and its dot, say) is masked whole."""
    code_, out, err = send_plain_tests.relay(code, *words, env=env)
    if flat:
        out, err = (re.sub(r"\s+", "", x) for x in (out, err))
    return code_, masked(out), masked(err)


def on_off(*words: str, rewrapped: bool = False) -> tuple[tuple[int, str, str], str]:
    """The command's (exit code, stdout, stderr), the same with the plain branch on and off (`rewrapped`: up to
    where the plan's lines wrap, which moves with the two processes' pids), and which way phase 1 went."""
    trace = Path(tempfile.mkdtemp(prefix="rrpc")) / "trace"
    on = relay(ON, *words, env={**os.environ, "PLAIN_TRACE": str(trace)}, flat=rewrapped)
    off = relay(OFF, *words, flat=rewrapped)  # textwrap breaks paths anywhere
    assert on == off, "\n".join(difflib.unified_diff(on[1].splitlines(), off[1].splitlines(), lineterm=""))
    way = trace.read_text() if trace.exists() else ""
    shutil.rmtree(trace.parent)
    return on, way


def test_every_refusal_is_the_same_with_the_plain_branch_on_and_off(claude, monkeypatch):
    alpha = claude.session("alpha", messagingSocketPath=None)  # a live session, but none with a socket
    claude.dead(alpha)
    claude.session("twin", messagingSocketPath=None)
    claude.session("twin", messagingSocketPath=None)
    for target in ("claude:nobody", "claude:twin", "claude:gone", "nokind:alpha", "claude:"):
        (code, out, err), way = on_off("run", "ping", "-p", f"target={target}")
        assert code != 0 and (out or err) and way != "shown", (target, way)
    (code, out, err), way = on_off("run", "ping", "-p", "target=claude:alpha")  # no anchor: DiscoveryError's words
    assert code != 0 and "has a messaging socket" in out + err and way == "handed over", (out, err)
    claude.session("beta")
    claude.exe.write_text("#!/bin/sh\necho '9.9.999 (Claude Code)'\n")  # unverified: require_verified's words
    (code, out, err), way = on_off("run", "ping", "-p", "target=claude:beta")
    assert code != 0 and "9.9.999 is not verified" in out + err and way == "handed over", (out, err)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no client: its words
    (code, out, err), way = on_off("run", "ping", "-p", "target=claude:beta")
    assert code != 0 and "not found or not answering" in out + err and way == "handed over", (out, err)
    claude.exe.write_text("#!/bin/sh\necho '2.1.332 (Claude Code)'\n")
    monkeypatch.setenv("PATH", f"{claude.exe.parent}:/usr/bin:/bin")
    Ledger(ledger_path()).halt("a test halt", by="test")  # phase 1 leaves a halt to the models: the same output
    (code, out, err), way = on_off("run", "ping", "-p", "target=claude:beta", rewrapped=True)
    assert code == 1 and way == "handed over" and "withheld" in out, (out, err)


def test_a_plain_run_prints_what_the_models_print_once_and_answers_no_without_a_terminal(claude):
    claude.session("alpha")
    (code, out, err), way = on_off("run", "ping", "-p", "target=claude:alpha", rewrapped=True)
    assert way == "shown" and code == 1
    assert out.startswith(re.sub(r"\s+", "", LINE + "Plan: list the operator inbox as a Claude peer"))
    assert out.count(re.sub(r"\s+", "", LINE)) == 1 and out.count("Plan:") == 1 and "Noterminaltoaskon" in out
    assert "theplanchanged" not in out


def test_phase_one_loads_no_pydantic_event_loop_or_libtmux(claude):
    claude.session("alpha")
    assert phase_one_modules("claude:alpha") == "PIN True [] [] False"


# -- phase 2: the listing asked without reprinting it, then the step's own plan as any gate shows it -------------

def test_the_listing_is_asked_without_reprinting_it_and_the_steps_plan_is_shown_and_asked(claude):
    """y to the listing (not printed again: its digest is the one shown), then the step's plan: printed and asked as
    any gate does (PreShownGate compares the first plan only), n to it: withheld, the registry entry removed."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from relay_repl.session.core.preshown_gate import CHANGED, PreShownGate

    claude.session("alpha")
    pre, printed = plain()
    assert pre.digest is not None
    written: list[str] = []
    with create_pipe_input() as pipe:
        def write(line: str) -> None:
            written.append(line)
            if line == "approved":  # the listing's yes taken: the next question's answer
                pipe.send_text("n\r")

        pipe.send_text("y\r")
        gate = PreShownGate(pre.digest, input=pipe, output=DummyOutput(), write=write)
        _, said, session = models("claude:alpha", pre, gate)
    plans = [w for w in written if "Plan:" in w]
    assert CHANGED not in written and len(plans) == 1 and written.index("approved") < written.index(plans[0]), written
    assert plans[0].startswith(f"recipe ping, run {pre.run_id}, round 1/1, step 1: tell claude:alpha\nPlan: send to")
    assert "hop=0 want=ack] ping" in plans[0]
    assert "approved" in written and written[-1].startswith("declined: nothing was done"), written
    assert LINE not in said
    assert not (claude.cfg / "sessions" / f"{os.getpid()}.json").exists()  # removed when the inbox closed
