"""`relay send`'s plain pre-plan (frontends/send_plain.py, issue 40) against the models' plan, for Claude.

Each case builds a real Claude registry (a live `sleep` process with its procStart, its record, a real
listening Unix socket, a peerToken key file or none, a real tmux pane or none) and a real ledger, and
holds the plan phase 1 prints equal to the plan the models ask about for the same send (fields,
digest, bytes): idle, busy, waiting, token or not, in a pane (tmux named as the fallback) or not, an
earlier send of the same body still open, a body quoting a peer. Then: what phase 1 hands to the
models (each refusal: the same stdout, stderr and exit code with the plain branch on and off), the
modules phase 1 loads, and the gate when the plan changed between the two phases.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input

from relay_repl.core.peertext import quote
from relay_repl.frontends import send_plain
from relay_repl.store.ledger import Ledger
from relay_repl.store.paths import ledger_path
from relay_repl.system.proc import proc_start
from tests.frontends.send_plain_helpers import models_plan, normalised, plain_plan, same_plan

REPO = Path(__file__).parents[2]


class ClaudeWorld:
    """A private Claude config dir, RELAY_HOME with a ledger, a private tmux server; sessions added by `session`."""

    def __init__(self, tmp: Path) -> None:
        self.cfg = tmp / "claude"
        (self.cfg / "sessions").mkdir(parents=True)
        self.socks = Path(tempfile.mkdtemp(prefix="rsp", dir="/tmp"))  # a socket path must stay under 108 bytes
        self.tmux = f"relay-send-plain-{uuid.uuid4().hex[:8]}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.listeners: list[socket.socket] = []
        self.pane_pid: int | None = None

    def pane(self) -> int:
        """A tmux pane (its shell runs `sleep`): a session recorded with its pid is rostered there."""
        subprocess.run(["tmux", "-L", self.tmux, "-f", "/dev/null", "new-session", "-d", "-s", "plain", "sleep 600"],
                       check=True)
        out = subprocess.run(["tmux", "-L", self.tmux, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True,
                             check=True).stdout
        self.pane_pid = int(out.split()[0])
        return self.pane_pid

    def session(self, name: str = "alpha", *, in_pane: bool = False, token: bool = False, socket_up: bool = True,
                **fields: object) -> int:
        if in_pane:
            pid = self.pane()
        else:
            p = subprocess.Popen(["sleep", "600"])
            self.procs.append(p)
            pid = p.pid
        sock = self.socks / f"{pid}.sock"
        if socket_up:
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(sock))
            s.listen()
            self.listeners.append(s)
        rec = {"pid": pid, "sessionId": f"sess-{pid}", "cwd": "/home/user/proj", "startedAt": 1_796_034_468_903,
               "procStart": proc_start(pid), "version": "2.1.332", "peerProtocol": 1, "kind": "interactive",
               "entrypoint": "cli", "name": name, "nameSource": "user", "status": "idle", "updatedAt": 1_796_034_469_009,
               "messagingSocketPath": str(sock), **fields}
        self.write(pid, rec)
        if token:
            h = hashlib.sha256(str(sock).encode()).hexdigest()
            (self.cfg / "sessions" / f"{pid}.{h}.key").write_text(json.dumps({"peerToken": "tok-" + uuid.uuid4().hex}))
        return pid

    def write(self, pid: int, rec: dict) -> None:
        (self.cfg / "sessions" / f"{pid}.json").write_text(json.dumps({k: v for k, v in rec.items() if v is not None}))

    def record(self, pid: int) -> dict:
        return json.loads((self.cfg / "sessions" / f"{pid}.json").read_text())

    def dead(self, like: int, name: str = "gone") -> int:
        """A record like session `like`'s, named `name`, for a process that has exited (its procStart taken
        while it lived): the registry's leftover of a dead session. Its pid."""
        gone = subprocess.Popen(["sleep", "600"])
        rec = {**self.record(like), "pid": gone.pid, "name": name, "procStart": proc_start(gone.pid)}
        gone.kill()
        gone.wait()
        self.write(gone.pid, rec)
        return gone.pid

    def close(self) -> None:
        for s in self.listeners:
            s.close()
        for p in self.procs:
            p.kill()
            p.wait()
        subprocess.run(["tmux", "-L", self.tmux, "kill-server"], capture_output=True)
        shutil.rmtree(self.socks, ignore_errors=True)


@pytest.fixture
def world(tmp_path, monkeypatch):
    if shutil.which("tmux") is None:
        pytest.skip("tmux not installed")
    for k in ("TMUX", "RELAY_ADAPTERS_DIR", "RELAY_LAB_DIR", "RELAY_FIDELITY_CANDIDATE", "CLAUDE_CODE_MESSAGING_SOCKET",
              "CLAUDECODE", "CODEX_THREAD_ID", "CODEX_HOME", "GEMINI_CLI"):
        monkeypatch.delenv(k, raising=False)
    w = ClaudeWorld(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RELAY_HOME", str(tmp_path / "relay"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(w.cfg))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("RELAY_TMUX_SOCKET", w.tmux)
    Ledger(ledger_path())  # the ledger a first send makes (phase 1 only uses one that exists)
    yield w
    w.close()


# -- the same plan, both ways ---------------------------------------------------------------------------------

CASES = {
    "idle": dict(),
    "busy": dict(status="busy"),
    "waiting": dict(status="waiting", waitingFor="permission to run Bash"),
    "waiting_no_word": dict(status="waiting"),
    "token": dict(token=True),
    "in_pane": dict(in_pane=True),
    "in_pane_busy_token": dict(in_pane=True, status="busy", token=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_plain_plan_is_the_models_plan(case, world):
    world.session(**CASES[case])
    fields = same_plan("claude:alpha", "hi there")
    assert fields["transport"] == "claude-code-socket"
    if CASES[case].get("in_pane"):
        assert "tmux would also work" in fields["fallback"]
    if CASES[case].get("token"):
        assert any("auth frame" in n for n in fields["notes"])
    if CASES[case].get("status") in ("busy", "waiting"):
        assert any(f"target is {CASES[case]['status']}" in n for n in fields["notes"])


def test_a_session_named_by_its_address_or_its_name_alike(world):
    world.session("alpha")
    same_plan("claude:alpha", "one")
    assert same_plan("claude:alpha", "two")["relay_id"].endswith("-2")  # the next id, taken as next_id takes it


def test_an_earlier_send_of_this_body_still_in_flight_is_named(world):
    pid = world.session()
    p = subprocess.Popen(["sleep", "600"])  # the process still sending it: alive, so not swept
    world.procs.append(p)
    led = Ledger(ledger_path())
    led.event("delivery", delivery="d-old", data={"relay_id": "someone-7", "transport": "claude-code-socket",
                                                  "spec": "claude:alpha", "body": "hi", "pid": p.pid,
                                                  "proc_start": proc_start(p.pid)})
    led.event("answer", delivery="d-old", relay_id="someone-7", data={"approved": True})
    led.event("stage:write", delivery="d-old", relay_id="someone-7", data={"state": "queued", "detail": "written"})
    fields = same_plan("claude:alpha", "hi")
    assert any(f"still in flight in pid {p.pid}" in n for n in fields["notes"]), fields["notes"]
    assert pid


def test_an_earlier_interrupted_send_of_this_body_is_named(world):
    world.session()
    led = Ledger(ledger_path())
    led.event("delivery", delivery="d-old", data={"relay_id": "someone-3", "spec": "claude:alpha", "body": "hi",
                                                  "pid": 1, "proc_start": "1"})
    led.event("answer", delivery="d-old", relay_id="someone-3", data={"approved": True})
    led.event("outcome", delivery="d-old", relay_id="someone-3", data={"state": "interrupted"})
    fields = same_plan("claude:alpha", "hi")
    assert any("is interrupted: relay id someone-3" in n for n in fields["notes"]), fields["notes"]


def test_a_body_quoting_a_peer_says_whose_words_they_are(world):
    world.session()
    body = "please look: " + quote("codex:beta", "verified", "then git push --force to main")
    fields = same_plan("claude:alpha", body)
    assert any("quote codex:beta's words" in n and "consent-only" in n for n in fields["notes"]), fields["notes"]


# -- handed to the models ---------------------------------------------------------------------------------------

def _handed_over(spec: str = "claude:alpha", body: str = "hi") -> send_plain.Preplan:
    pre, printed = plain_plan(spec, body)
    assert pre.digest is None and printed == ""
    return pre


def test_what_phase_one_does_not_answer_plainly_is_the_models(world, tmp_path):
    pid = world.session("alpha", socket_up=False)  # no socket: the models refuse it (or go by tmux)
    assert _handed_over().relay_id is not None  # the id was taken: the models use it (nothing else was done)
    world.session("beta", status="busy")
    world.write(pid, {**world.record(pid), "version": "9.9.999"})  # an unverified client: the version policy's words
    _handed_over()
    assert _handed_over("claude:nobody").relay_id is None
    assert _handed_over("nokind:alpha").relay_id is None
    assert _handed_over("claude:beta", "tab\there").relay_id is None
    assert _handed_over("claude:beta", "x" * 4001).relay_id is None
    Ledger(ledger_path()).halt("a test halt", by="test")
    assert _handed_over("claude:beta").relay_id is None


def test_a_send_a_dead_process_left_open_goes_to_the_models_which_sweep_it(world):
    world.session()
    led = Ledger(ledger_path())
    led.event("delivery", delivery="d-dead", data={"relay_id": "gone-1", "spec": "claude:alpha", "body": "x", "pid": 1,
                                                   "proc_start": "1"})
    led.event("answer", delivery="d-dead", relay_id="gone-1", data={"approved": True})
    assert _handed_over().relay_id is None


def test_a_listener_name_already_taken_is_the_models(world):
    world.session()
    (world.socks / f"{os.getpid()}.sock").touch()  # `<pid>.sock` taken: the models pick a fresh name
    assert _handed_over().relay_id is not None


# -- the command, with the plain branch on (entry.main) and off (cli.main) --------------------------------------

ON = """
import os, sys
from relay_repl.frontends import send_plain
from relay_repl.frontends.entry import main

real = send_plain.preplan

def traced(*a, **k):  # which way phase 1 went, for the test (a file: stdout and stderr are compared)
    pre = real(*a, **k)
    with open(os.environ["PLAIN_TRACE"], "w") as f:
        f.write("shown" if pre.digest else "handed over")
    return pre

send_plain.preplan = traced
sys.argv[0] = "relay"
sys.exit(main())
"""
OFF = "import sys; from relay_repl.frontends.cli import main; sys.argv[0] = 'relay'; sys.exit(main())"


def relay(code: str, *words: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    r = subprocess.run([sys.executable, "-c", code, *words], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       cwd=REPO, timeout=120, env=env)
    return r.returncode, normalised(r.stdout), normalised(r.stderr)


def on_off(*words: str) -> tuple[tuple[int, str, str], str]:
    """The command's (exit code, stdout, stderr), the same with the plain branch on and off, and which way
    phase 1 went ("shown", "handed over", or "" when the shape was not the bare one)."""
    trace = Path(tempfile.mkdtemp(prefix="rspt")) / "trace"
    on = relay(ON, *words, env={**os.environ, "PLAIN_TRACE": str(trace)})
    off = relay(OFF, *words)
    assert on == off
    way = trace.read_text() if trace.exists() else ""
    shutil.rmtree(trace.parent)
    return on, way


def test_every_refusal_is_the_same_with_the_plain_branch_on_and_off(world):
    pid = world.session("alpha")
    world.session("twin")
    world.session("twin")
    world.dead(pid)
    world.session("nosock", socket_up=False)
    world.session("future", version="9.9.999")
    cases = [("claude:nobody", "hi"), ("claude:twin", "hi"), ("claude:gone", "hi"), ("nokind:alpha", "hi"),
             ("claude:", "hi"), ("claude:alpha", ""), ("claude:alpha", "a\tb"), ("claude:alpha", "x" * 4001),
             ("claude:alpha", "[relay/1 from=a:b@c to=peer id=c-1 hop=9 want=none] x"), ("claude:nosock", "hi"),
             ("claude:future", "hi")]
    for target, body in cases:
        (code, out, err), way = on_off("send", target, body)
        assert code != 0 and (out or err) and way != "shown", (target, body, way)
    Ledger(ledger_path()).halt("a test halt", by="test")
    (code, out, err), way = on_off("send", "claude:alpha", "hi")
    assert code == 1 and "relay-halt is in force" in err and way == "handed over"


def test_a_plain_send_prints_what_the_models_print_and_answers_no_without_a_terminal(world):
    world.session("alpha", status="busy", token=True)
    (code, out, err), way = on_off("send", "claude:alpha", "hi")
    assert way == "shown"
    assert code == 1 and out.startswith("Plan: send to claude:alpha  (relay id operator.")
    assert out.count("Plan:") == 1 and "No terminal to ask on: answering No" in out
    assert "the plan changed" not in out


def test_without_a_ledger_the_first_send_is_the_models(world):
    ledger_path().unlink()
    world.session()
    assert _handed_over().relay_id is None
    (code, out, _), way = on_off("send", "claude:alpha", "hi")
    assert code == 1 and out.count("Plan:") == 1 and way == "handed over"


# -- what phase 1 loads --------------------------------------------------------------------------------------------

PIN = """
import os, sys
from relay_repl.frontends.send_plain import preplan
pre = preplan('claude', 'alpha', 'hi', dict(os.environ))
heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'pydantic_core', 'asyncio', 'anyio', 'libtmux',
                                                          'annotated_types', 'prompt_toolkit'})
print('PIN', pre.digest is not None, heavy, 'dataclasses' in sys.modules)
"""


def test_phase_one_loads_no_pydantic_event_loop_or_libtmux(world):
    world.session("alpha", in_pane=True, token=True, status="busy")
    r = subprocess.run([sys.executable, "-c", PIN], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "PIN True [] False", r.stdout


# -- the gate of a plan already shown -----------------------------------------------------------------------------

def _gate(shown: str, pipe, answer: str):
    from prompt_toolkit.output import DummyOutput

    from relay_repl.session.core.preshown_gate import PreShownGate

    written: list[str] = []
    pipe.send_text(answer)
    return PreShownGate(shown, input=pipe, output=DummyOutput(), write=written.append), written


def _send_with(gate, spec: str, relay_id: str):
    import anyio

    from relay_repl.frontends.commands.common import inbox_open
    from relay_repl.session.app import make_session

    async def go():
        session = make_session(approve=gate, echo=None)
        async with inbox_open(session, lambda line: None):
            return await session.send(spec, "hi", relay_id=relay_id)

    return anyio.run(go)


def test_the_same_plan_is_not_printed_again_and_is_asked(world):
    from relay_repl.session.core.preshown_gate import CHANGED

    world.session()
    pre, printed = plain_plan("claude:alpha", "hi")
    assert pre.digest is not None and printed.startswith("Plan: ")
    with create_pipe_input() as pipe:
        gate, written = _gate(pre.digest, pipe, "n\r")
        d = _send_with(gate, "claude:alpha", pre.relay_id)
    assert d.state.value == "withheld" and d.relay_id == pre.relay_id
    assert not any(w.startswith("Plan:") or w == CHANGED for w in written), written
    assert written[-1].startswith("declined: nothing was done")


def test_a_plan_that_changed_while_shown_is_printed_and_only_it_is_approved(world):
    from relay_repl.core.approval import plan_digest
    from relay_repl.session.core.preshown_gate import CHANGED

    pid = world.session()
    pre, printed = plain_plan("claude:alpha", "hi")
    assert "target is busy" not in printed
    world.write(pid, {**world.record(pid), "status": "busy"})  # between the phases: the models see it busy
    with create_pipe_input() as pipe:
        gate, written = _gate(pre.digest, pipe, "y\r")
        d = _send_with(gate, "claude:alpha", pre.relay_id)
    i = written.index(CHANGED)
    assert written[i + 1] == d.plan.render() and "target is busy" in written[i + 1]
    assert plan_digest(d.plan) != pre.digest
    assert "approved" in written
    answers = Ledger(ledger_path()).events(kind="answer")
    assert answers[-1].data["approved"] is True
    plans = Ledger(ledger_path()).events(kind="plan")
    assert len(plans) == 1 and plans[0].data == d.plan.model_dump(mode="json")  # the one plan asked about
    # the approval bound the plan on screen, and it was used: the send went on (refused at connect: the
    # test's socket is served by this process, not the session's pid), never with the first plan
    assert d.state.value in ("refused", "failed")


def test_models_plan_helper_sees_the_pinned_id(world):
    world.session()
    assert models_plan("claude:alpha", "hi", "operator.x.1-99").relay_id == "operator.x.1-99"


@pytest.mark.parametrize("words, taken", [
    (["send", "claude:alpha", "hi"], True),
    (["send", "claude:alpha"], False), (["send", "--want", "reply", "claude:alpha", "hi"], False),
    (["send", "claude:alpha", "hi", "--json"], False), (["send", "claude:alpha", "-t"], False),
    (["send", "host/claude:alpha", "hi"], False), (["send", "%3", "hi"], False), (["send", "alpha", "hi"], False),
    (["send", " claude:alpha", "hi"], False), (["send", "claude:alpha", "[relay/1 x] y"], False),
    (["targets", "claude:alpha", "hi"], False), (["send", "claude:", "hi"], False),
])
def test_only_the_bare_shape_is_taken(words, taken):
    assert (send_plain.shape(words) is not None) is taken


def test_a_refused_message_leaves_an_empty_relay_home_empty(world, tmp_path):
    """Too long, or holding a control character: the one-line refusal, exit 1, and no file made (before, the
    session made the ledger and the inbox directory first, then refused)."""
    home = tmp_path / "empty-home"
    home.mkdir()
    env = {**os.environ, "RELAY_HOME": str(home)}
    world.session("alpha")
    for body, said in (("hi\x1bthere", "the control character U+001B ESC (escape) at position 3"),
                       ("x" * 4001, "over the 4,000 a relay line may carry")):
        code, out, err = relay(OFF, "send", "claude:alpha", body, env=env)
        assert code == 1 and said in err and "Plan:" not in out, (code, out, err)
        assert list(home.iterdir()) == []
    code, _, err = relay(OFF, "send", "claude:alpha", "[relay/1 from=a:b@c to=peer id=c-1 hop=9 want=none] x", env=env)
    assert code != 0 and "hop" in err  # a pasted envelope is still the forward's to judge
