"""Live: the shipped recipes against the REAL Claude Code and Codex in the lab, whose stub
agents answer relay envelopes by default (a Claude agent SendMessages the operator's listed
inbox, a Codex agent calls relay_reply on the relay MCP server). Every send is gated (a scripted yes here; the
terminal prompt is driven in the SIGKILL test). Delivered-once is checked twice: in the
ledger (each relay id sent once) and on the receivers (each id answered once by the stub
agent, never seen as a duplicate)."""

from __future__ import annotations

import os
import re
import signal
import sys

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.stubs.client import StubClient
from relay_repl.session.core.gate import ScriptedGate
from tests.support.sessions import live_session
from tests.support.tmuxdrive import Screen

pytestmark = [pytest.mark.live, pytest.mark.anyio]

CLAUDE, CODEX = "claude:alpha", "codex:beta"
YES = [True] * 40


async def idle() -> None:
    for name in ("alpha", "beta"):
        await anyio.to_thread.run_sync(lambda n=name: helpers.wait_idle(n, timeout=90))


async def answered_ids(stub: StubClient) -> tuple[list[str], list[str]]:
    """Relay ids the lab agents answered (each label once per fresh id) and duplicate notes."""
    answered: list[str] = []
    dupes: list[str] = []
    for name in ("alpha", "beta"):
        for r in await stub.requests(name, body=False):
            label = r.answered_by  # "converse: <ids> step 1/3" on the first request of each answer
            if label.startswith("converse: ") and label.endswith(" step 1/" + label.rsplit("/", 1)[-1]) \
                    and not label.startswith("converse: nothing") and not label.startswith("converse: halt"):
                answered += label[len("converse: "):].rsplit(" step ", 1)[0].split()
            if "duplicate relay id" in (r.reply_text or ""):
                dupes.append(r.reply_text)
    return answered, dupes


def sent_once(s, run) -> None:
    ids = [st.relay_id for st in run.steps]
    assert len(ids) == len(set(ids)), ids
    for rid in ids:
        assert s.ledger.sightings(rid, "sent") == 1, rid


async def test_ping_claude_and_codex(lab):
    async with live_session(YES) as (s, gate, inbox):
        for target in (CLAUDE, CODEX):
            run = await s.run("ping", target=target)
            assert run.state == "done", run
            (step,) = run.steps
            assert step.answer is not None and step.answer.body == f"ack {step.relay_id}", run
            assert step.answer.hop == 1 and step.answer.verdict == "verified"  # from the agent's own process
        assert "Claude peer" in gate.shown[0].action  # Claude answers to a listed inbox: asked first
        assert gate.shown[1].heading.startswith("recipe ping, run run-") and gate.shown[1].heading.endswith(
            "round 1/1, step 1: tell claude:alpha")
    await idle()


async def test_review_codex_writer_claude_reviewer(lab):
    async with StubClient(lab.stub.control) as stub, live_session(YES) as (s, gate, inbox):
        for name in ("alpha", "beta"):
            await stub.clear_requests(name)
        run = await s.run("review", writer=CODEX, reviewer=CLAUDE, task="summarize the README in one line")
        assert run.state == "done" and run.round == 3, run  # the stub reviewer never says LGTM
        assert [(st.round, st.target, st.hop, st.answer.hop) for st in run.steps] == [
            (r, t, h, h + 1) for r in (1, 2, 3) for t, h in ((CODEX, 0), (CLAUDE, 2))]
        # the writer's reply reached the reviewer through the template
        reviewer_ask = [p for p in gate.shown if p.heading and p.heading.endswith("step 2: ask claude:alpha")][0]
        assert f"reply to {run.steps[0].relay_id}" in reviewer_ask.payload
        sent_once(s, run)
        answered, dupes = await answered_ids(stub)
        assert sorted(answered) == sorted(st.relay_id for st in run.steps) and not dupes
        # until: a reviewer reply that contains LGTM ends the run after that round
        short = await s.run("review", writer=CODEX, reviewer=CLAUDE, task="LGTM")
        assert short.state == "done" and short.round == 1 and "LGTM" in (short.reason or ""), short
    await idle()


async def test_five_rounds_reaches_round_five_with_no_hop_above_four(lab):
    async with StubClient(lab.stub.control) as stub, live_session(YES) as (s, gate, inbox):
        for name in ("alpha", "beta"):
            await stub.clear_requests(name)
        run = await s.run("five-rounds", a=CLAUDE, b=CODEX)
        assert run.state == "done" and run.round == 5, run
        sent = [s.ledger._query("SELECT hop FROM relay_ids WHERE relay_id=? AND direction='sent'", (st.relay_id,))[0][0]
                for st in run.steps]
        assert sent == [0, 2] * 5, sent
        # every hop the ledger holds for this run: the sends, every id seen, and the answers it recorded
        seen = [r[0] for r in s.ledger._query("SELECT hop FROM relay_ids")]
        answers = [e.data["answer"]["hop"] for e in s.ledger.events(relay_id=run.id, kind="run-answer")]
        assert answers == [1, 3] * 5 and max(seen + answers) <= 4, (seen, answers)
        sent_once(s, run)
        answered, dupes = await answered_ids(stub)
        assert sorted(answered) == sorted(st.relay_id for st in run.steps) and not dupes
    await idle()


async def test_ask_all_gathers_a_reply_from_every_lab_target(lab):
    async with live_session(YES) as (s, gate, inbox):
        run = await s.run("ask-all", question="which branch are you on?")
        live = sorted(t.spec for t in s.targets if t.live and t.transports and t.pid != os.getpid())
        assert run.state == "done" and sorted(run.replies) == live == sorted([CLAUDE, CODEX]), run
        assert all(st.hop == 0 and st.answer.hop == 1 and st.answer.verdict == "verified" for st in run.steps)
    await idle()


async def test_no_at_round_two_then_resume_delivers_each_step_once(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True, True, False]) as (s, gate, inbox):
        for name in ("alpha", "beta"):
            await stub.clear_requests(name)
        run = await s.run("five-rounds", a=CLAUDE, b=CODEX)  # register, round 1 (2 asks), then No
        assert run.state == "withheld" and run.round == 2, run
        assert "round 2/5, step 1 (ask claude:alpha): the operator answered No" in run.reason
        s.approve = ScriptedGate(YES)
        done = await s.resume(run.id)
        assert done.state == "done" and done.round == 5, done
        assert len(s.approve.shown) == 8  # round 1 was not asked (nor sent) again
        sent_once(s, done)
        answered, dupes = await answered_ids(stub)
        assert sorted(answered) == sorted(st.relay_id for st in done.steps) and not dupes
    await idle()


def _relay_pid(screen: Screen) -> int:
    import subprocess

    shell = int(screen.pane.pane_pid)
    out = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
    return int(out[0])


async def test_sigkill_mid_round_then_resume_delivers_each_step_once(lab):
    """`relay run five-rounds` in a terminal: y to the inbox listing and round 1, y to round 2's
    first ask; once its reply is in, SIGKILL relay at the prompt for round 2 step 2."""
    cmd = (f"{sys.executable} -m relay_repl.frontends.cli run five-rounds -p a={CLAUDE} -p b={CODEX}; "
           "echo RC=$?; sleep 600")
    async with StubClient(lab.stub.control) as stub:
        for name in ("alpha", "beta"):
            await stub.clear_requests(name)
        screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))
        try:
            for n in range(1, 5):  # register, r1 s1, r1 s2, r2 s1
                await anyio.to_thread.run_sync(
                    lambda n=n: screen.wait_for(lambda t: t.count("Proceed? [y/N]") >= n, timeout=120))
                screen.keys("y", "Enter")
            text = await anyio.to_thread.run_sync(
                lambda: screen.wait_for(lambda t: t.count("Proceed? [y/N]") >= 5, timeout=120))
            assert "round 2/5, step 2: ask codex:beta" in text
            os.kill(_relay_pid(screen), signal.SIGKILL)
            await anyio.to_thread.run_sync(lambda: screen.wait_for("RC=137", timeout=30))
            run_id = re.search(r"run (run-[0-9a-f]{8}), round", text).group(1)
        finally:
            screen.close()
        await idle()
        async with live_session(YES) as (s, gate, inbox):
            done = await s.resume(run_id)
            assert done.state == "done" and done.round == 5, done
            headings = [p.heading for p in gate.shown if p.heading]
            assert headings[0].endswith("round 2/5, step 2: ask codex:beta"), headings  # nothing before it again
            assert len(headings) == 7
            sent_once(s, done)
            answered, dupes = await answered_ids(stub)
            assert sorted(answered) == sorted(st.relay_id for st in done.steps) and not dupes
    await idle()



async def test_cli_dry_run_prints_every_plan_and_sends_nothing(lab):
    import subprocess

    from relay_repl.store.ledger import Ledger

    async with StubClient(lab.stub.control) as stub:
        for name in ("alpha", "beta"):
            await stub.clear_requests(name)
        before = max((e.seq for e in Ledger.default().events()), default=0)
        res = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-m", "relay_repl.frontends.cli", "run", "five-rounds", "-p", f"a={CLAUDE}",
             "-p", f"b={CODEX}", "--dry-run"], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120))
        assert res.returncode == 0, res.stderr
        heads = re.findall(r"^recipe five-rounds, run run-\w+, round (\d)/5, step (\d): ask (\S+)$", res.stdout, re.M)
        assert heads == [(str(r), str(i), t) for r in range(1, 6) for i, t in ((1, CLAUDE), (2, CODEX))]
        hops = re.findall(r"3 payload +\[relay/1 [^\]]* hop=(\d) want=reply\]", res.stdout)
        assert hops == ["0", "2"] * 5
        assert res.stdout.count("Plan: send to") == 10 and "Proceed?" not in res.stdout
        await anyio.sleep(2)  # nothing may arrive: absence has no event to wait for
        assert await stub.requests("alpha", body=False) == [] and await stub.requests("beta", body=False) == []
        assert Ledger.default().events(since=before) == []  # not a plan, an id or an answer was written
        bad = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-m", "relay_repl.frontends.cli", "run", "ping", "-p", "target=claude:nobody"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120))
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "no target claude:nobody" in bad.stderr
