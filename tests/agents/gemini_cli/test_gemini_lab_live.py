"""Live: `relay lab up --gemini 1` starts the REAL Gemini CLI beside Claude Code and Codex.

The lab names no kind to do it: the flag, the settings file, the pane's command and its readiness
are the Gemini kind's own lab pieces (lab/kind_sessions.py asks `GeminiCliKind.lab_*`). Then
`relay --lab targets --json` lists all three live, gemini:gamma with its pid, pane and version, and
the shipped `ask-all` recipe gathers a verified reply from each of the three kinds.
Needs gemini 0.61.0 in the lab clients ($RELAY_LAB_CLIENTS: `relay lab install`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay_repl.lab.install import lab_binary

pytestmark = pytest.mark.live

SPECS = ["claude:alpha", "codex:beta", "gemini:gamma"]


def _relay(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], env={**os.environ, "RELAY_HOME": str(home)},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=240, check=False)


@pytest.fixture(scope="module")
def three_kinds() -> Iterator[Path]:
    """A lab of its own (RELAY_HOME) with one session of each kind, started by the CLI's flags."""
    if not lab_binary("gemini-cli").exists() or not shutil.which("tmux"):
        pytest.skip(f"no gemini in the lab clients ({lab_binary('gemini-cli')}): relay lab install")
    home = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))  # short: the lab's unix socket paths
    try:
        up = _relay(home, "lab", "up", "--claude", "1", "--codex", "1", "--gemini", "1")
        assert up.returncode == 0, up.stderr[-3000:]
        yield home
    finally:
        down = _relay(home, "lab", "down")
        shutil.rmtree(home, ignore_errors=True)
        assert down.returncode == 0, down.stderr[-2000:]


def test_lab_up_gemini_beside_claude_and_codex_lists_gemini_gamma_live(three_kinds: Path):
    st = json.loads(_relay(three_kinds, "lab", "status", "--json").stdout)
    assert [(s["kind"], s["name"], s["alive"]) for s in st["sessions"]] == [
        ("claude-code", "alpha", True), ("codex", "beta", True), ("gemini-cli", "gamma", True)], st["sessions"]
    gem = next(s for s in st["sessions"] if s["kind"] == "gemini-cli")
    listed = _relay(three_kinds, "--lab", "targets", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {t["spec"]: t for t in json.loads(listed.stdout)}
    assert set(SPECS) <= set(rows), sorted(rows)
    t = rows["gemini:gamma"]
    assert t["live"] and t["kind"] == "gemini-cli" and t["transports"] == ["tmux"], t
    assert t["pid"] == gem["pid"] and t["pane"] == gem["pane_id"], (t, gem)
    assert t["client_version"] == "0.61.0" and t["client_status"] == "pinned", t
    assert rows["claude:alpha"]["live"] and rows["codex:beta"]["live"]


def test_the_plain_listing_lists_a_real_gemini_session_as_its_models_do(three_kinds: Path, monkeypatch):
    """Issue 40: beside Claude Code and Codex, the real Gemini CLI's session is read plain too (its
    state by the one classifier, loaded by file), the same table and --json bytes as the models'.
    Here, not in tests/frontends, for this module's lab (a lab of its own costs ~30 s of the live half)."""
    import relay_repl.lab.launcher as launcher
    from relay_repl.agents import default_providers
    from relay_repl.agents.discovery import discover_all
    from relay_repl.core.target import format_targets
    from relay_repl.core.target_row import format_targets as table
    from relay_repl.frontends.commands.targets import _target_json
    from relay_repl.frontends.targets_plain import listing, listing_json, plain_rows
    from relay_repl.system import loopless

    monkeypatch.setenv("RELAY_HOME", str(three_kinds))
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    parts = dict(plain_rows())
    assert all(parts[k] is not None for k in ("claude-code", "codex", "gemini-cli")), parts
    (gamma,) = parts["gemini-cli"]
    assert (gamma.name, gamma.live, gamma.transports, gamma.client_status) == ("gamma", True, ("tmux",), "pinned")
    assert gamma.state in ("idle", "busy") and gamma.pane, gamma.state  # its screen read, not unknown
    found = listing()
    assert found is not None
    targets = loopless.run(lambda: discover_all(default_providers()))
    assert listing_json(found) == json.dumps([_target_json(t) for t in targets], indent=1)
    assert table(found) == format_targets(targets)


def test_a_sends_plain_plan_to_the_real_gemini_is_the_models_plan(three_kinds: Path, monkeypatch):
    """Issue 40: `relay send gemini:gamma ...`'s plan printed before the models (frontends/send_plain.py
    with agents/gemini_cli/plain_plan.py: the real client's pane read by preflight's own snapshot and
    classifier) is the models' plan for the same relay id, field for field, digest and text; and the
    kind's parts come from two tmux calls when listed through plain_plan.listing (today's path: four).
    Here, on this module's lab (a lab of its own costs ~30 s of the live half)."""
    import relay_repl.lab.launcher as launcher
    from relay_repl.agents.gemini_cli import plain_plan
    from relay_repl.agents.plain_choice import chooser
    from relay_repl.agents.plain_facts import adapter
    from relay_repl.frontends.send_plain import PlainSend
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate
    from relay_repl.system import pane_list
    from tests.frontends.send_plain_helpers import same_plan

    monkeypatch.setenv("RELAY_HOME", str(three_kinds))
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    make_session(approve=ScriptedGate([]), echo=None)  # the ledger, as the lab's first send makes it
    fields = same_plan("gemini:gamma", "hello gamma")  # fields, digest and bytes == the pipeline's plan
    assert any(n.endswith("composer empty (preflight runs again after your y)") for n in fields["notes"]), fields

    calls: list[list[str]] = []
    real = pane_list.run_tmux
    monkeypatch.setattr(pane_list, "run_tmux", lambda sock, args, env: calls.append(args) or real(sock, args, env))
    env = dict(os.environ)
    (gamma,) = [r for r in plain_plan.listing(env, pane_list.PlainRoster(env)) or [] if r.name == "gamma"]
    send = PlainSend(line=fields["payload"], relay_id=fields["relay_id"], sender="x", pid=os.getpid(), inbox_open=True,
                     interrupt=False, choose=chooser("gemini-cli", adapter("gemini-cli")))
    parts = plain_plan.plan_parts(gamma, env, send)
    assert [a[0] for a in calls if a[0] != "list-panes"] == ["display-message"], calls  # one capture (a list-panes per server)
    assert parts is not None and parts["now"] in fields["notes"] and parts["delivered_when"] == fields["delivered_when"]


@pytest.mark.anyio
async def test_ask_all_gathers_a_verified_reply_from_all_three_kinds(three_kinds: Path, monkeypatch):
    import relay_repl.lab.launcher as launcher
    from tests.support.sessions import live_session

    monkeypatch.setenv("RELAY_HOME", str(three_kinds))
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    async with live_session([True] * 10) as (s, gate, inbox):
        run = await s.run("ask-all", question="which branch are you on?")
        assert run.state == "done" and sorted(run.replies) == SPECS, run
        assert sorted(st.target for st in run.steps) == SPECS
        assert all(st.answer is not None and st.answer.hop == 1 and st.answer.verdict == "verified"
                   for st in run.steps), run.steps


def test_a_runs_first_plan_to_the_real_gemini_is_the_models_plan(three_kinds: Path, monkeypatch):
    """Issue 40: `relay run ping -p target=gemini:gamma`'s first plan printed before the models
    (frontends/run_plain.py: the reply route from the lab session's settings.json) is the models' first plan
    for the same run id and relay id, field for field, digest and text (the gate says No)."""
    import relay_repl.lab.launcher as launcher
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate
    import relay_repl.lab.helpers as helpers
    from tests.frontends.run_plain_helpers import same_run_plan

    monkeypatch.setenv("RELAY_HOME", str(three_kinds))
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    make_session(approve=ScriptedGate([]), echo=None)  # the ledger, as the lab's first send makes it
    # the module's earlier tests leave gamma mid-turn or redrawing on a loaded machine (beside two CPU burners a
    # fresh run failed here: phase 1 handed the run over, as it must for a screen it cannot read as ready)
    helpers.wait_idle("gamma", timeout=60)
    fields = same_run_plan("ping", "target", "gemini:gamma", attempts=3)
    assert fields["heading"].endswith("step 1: tell gemini:gamma") and fields["reply_route"], fields
