"""Live: the REAL Gemini CLI 0.61.0, offline against the Gemini API stub, in a private netns and tmux server.

The session is started exactly as the kind tells the lab to (`lab_files`, `lab_launch`,
`lab_ready`), so these tests prove the kind's own lab pieces too. What they prove:
- `relay targets --json` lists `gemini:gamma` live with its pid, pane and client version;
- `relay send gemini:gamma hi --want reply --wait 60`, answered y in a real terminal, exits 0 with
  the reply (the stub model answers by running `relay reply` through `run_shell_command`), and the
  typed line is confirmed from gamma's own chat file;
- the same answer comes back through the relay MCP server configured in its settings (`--reply-via mcp`);
- a draft in gamma's composer makes a send refuse at preflight, before asking, with zero keys sent: the pane is
  byte-identical before and after.
The pane is started under the kind's `LabLaunch.argv()`, which drops CI/GITHUB_ACTIONS: run from a CI job
(CI=true), Gemini CLI would otherwise start headless and exit ("No input provided via stdin").
Needs `gemini` 0.61.0 in the lab clients ($RELAY_LAB_CLIENTS/node_modules/.bin/gemini).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from relay_repl.agents.kind import LabContext, LabPane
from relay_repl.agents.registry import kind_for
from relay_repl.lab.install import lab_binary
from relay_repl.lab.stubs.client import SyncStubClient
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live

VENV_BIN = Path(sys.executable).parent
RELAY = [sys.executable, "-m", "relay_repl"]
NAME = "gamma"


@dataclass
class GeminiLab:
    root: Path
    socket: str
    stub: SyncStubClient
    env: dict[str, str]
    pane: str
    pid: int

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout


def _wait(pred, what: str, timeout: float, show=None):  # noqa: ANN001 - a bounded wait on a real process
    end = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}" + (f"; screen:\n{show()}" if show else ""))
        time.sleep(0.2)


@pytest.fixture(scope="module")
def gemini_lab() -> Iterator[GeminiLab]:
    binary = lab_binary("gemini-cli")
    if not binary.exists():
        pytest.skip(f"no gemini in the lab clients ({binary}): relay lab install")
    kind = kind_for("gemini-cli")
    assert kind is not None
    root = Path(tempfile.mkdtemp(prefix="rgem-", dir="/tmp"))
    sock, ready = root / "stub.sock", root / "stub.json"
    stub_log = open(root / "stub.log", "wb")  # noqa: SIM115 - closed at teardown
    stub_proc = subprocess.Popen([sys.executable, "-m", "relay_repl.lab.netns", "--unshare", "--", sys.executable, "-m",
                                  "relay_repl.lab.stubs", "--control", str(sock), "--ready-file", str(ready)],
                                 stdout=stub_log, stderr=subprocess.STDOUT)
    socket = f"relay-gemini-{os.getpid()}"
    try:
        _wait(ready.exists, "the stub's ready file", 20)
        stub = SyncStubClient(sock)
        info = stub.add_session(NAME, "google")
        relay_home = root / "relay-home"
        ctx = LabContext(root=root, home=root / "home", bin_dir=binary.parent, logs=root, api_key="stub-key",
                         mcp_command=(str(VENV_BIN / "relay"), "mcp"), base_urls={NAME: info.base_url})
        for path, text in kind.lab_driver().files(ctx, [NAME]).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        work = ctx.workdir(NAME)
        work.mkdir(parents=True)
        launch = kind.lab_driver().launch(ctx, NAME, True)
        spec = kind.lab_driver().spec
        assert spec is not None
        homes = {var: str(root / d) for var, d in spec.homes.items()}  # what the lab sets for every lab process
        env = {"RELAY_HOME": str(relay_home), "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "TERM": "xterm-256color",
               **homes, **launch.env}
        cmd = f"env {' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())} {shlex.join(launch.argv())}"
        subprocess.run([sys.executable, "-m", "relay_repl.lab.netns", "--enter", str(stub_proc.pid), "--",
                        "tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", NAME, "-x", "160",
                        "-y", "45", "-c", str(work), cmd], check=True)
        subprocess.run(["tmux", "-L", socket, "set-option", "-g", "remain-on-exit", "on"], check=True)
        pane_id, pane_pid = subprocess.run(["tmux", "-L", socket, "display", "-p", "-t", NAME, "#{pane_id} #{pane_pid}"],
                                           capture_output=True, text=True, check=True).stdout.split()

        def ready_now():
            screen = subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", pane_id],
                                    capture_output=True, text=True).stdout
            return kind.lab_driver().ready(ctx, NAME, LabPane(pane_id=pane_id, pane_pid=int(pane_pid), screen=screen))

        def screen_now() -> str:
            return subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", pane_id],
                                  capture_output=True, text=True).stdout

        _wait(ready_now, "Gemini CLI to start, idle, with its chat file", 90, screen_now)
        op_env = dict(os.environ, RELAY_HOME=str(relay_home), RELAY_TMUX_SOCKET=socket, TERM="xterm-256color",
                      GEMINI_CLI_HOME=str(ctx.home))
        yield GeminiLab(root=root, socket=socket, stub=stub, env=op_env, pane=pane_id, pid=int(pane_pid))
    finally:
        # Gemini CLI outlives its tmux server (measured: `kill-server` leaves the node processes
        # running), so its process tree is ended first, by pid
        panes = subprocess.run(["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_pid}"],
                               capture_output=True, text=True).stdout.split()
        for pid in panes:
            kids = subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()
            for p in [*kids, pid]:
                try:
                    os.kill(int(p), 15)
                except (OSError, ValueError):
                    pass
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        stub_proc.terminate()
        try:
            stub_proc.wait(10)
        except subprocess.TimeoutExpired:
            stub_proc.kill()
        stub_log.close()
        shutil.rmtree(root, ignore_errors=True)


def relay_in_terminal(lab: GeminiLab, args: list[str], answers: int, timeout: float = 120) -> tuple[int, str]:
    """`relay ARGS` in a real terminal, y + Enter at each of `answers` prompts; (exit code, screen)."""
    cmd = f"{shlex.join(RELAY + args)} 2>&1; echo RC=$?; sleep 600"
    screen = Screen(["sh", "-c", cmd], lab.env)
    try:
        for n in range(1, answers + 1):
            screen.wait_for(lambda t, n=n: t.count("Proceed? [y/N]") >= n, timeout=60)
            screen.keys("y", "Enter")
        text = screen.wait_for("RC=", timeout=timeout)
        return int(text.split("RC=")[-1].split()[0]), text
    finally:
        screen.close()


def idle(lab: GeminiLab) -> None:
    from relay_repl.agents.gemini_cli.screen import classify
    from relay_repl.agents.screens.model import Snapshot

    def now() -> bool:
        r = classify(Snapshot(lines=lab.tmux("capture-pane", "-p", "-t", lab.pane).split("\n")))
        return r.kind == "idle"

    _wait(now, "gamma idle", 60)


def test_targets_lists_gamma_live_with_pid_pane_and_version(gemini_lab: GeminiLab):
    out = subprocess.run(RELAY + ["targets", "--json"], env=gemini_lab.env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    rows = data if isinstance(data, list) else data["targets"]
    gamma = [t for t in rows if t["spec"] == f"gemini:{NAME}"]
    assert len(gamma) == 1, rows
    t = gamma[0]
    assert t["live"] and t["pid"] == gemini_lab.pid and t["pane"] == gemini_lab.pane
    assert t["client_version"] == "0.61.0" and t["transports"] == ["tmux"]
    assert "footer shows session" in t["identified_by"]


def test_send_want_reply_answered_y_exits_0_with_the_reply(gemini_lab: GeminiLab):
    rc, text = relay_in_terminal(gemini_lab, ["send", f"gemini:{NAME}", "hi", "--want", "reply", "--wait", "60"], 1)
    assert rc == 0, text
    assert f"via tmux to gemini:{NAME}" in text and "chat file user record" in text
    assert "reply to " in text and f"gemini:{NAME}]" in text and "[verified, pid " in text
    idle(gemini_lab)


@pytest.mark.anyio
async def test_reply_via_the_relay_mcp_server_in_its_settings_and_the_turn_reply(gemini_lab: GeminiLab, monkeypatch):
    """The stub model calls `mcp_relay_relay_reply` (the relay MCP server Gemini CLI started from its
    settings.json); the answer arrives verified from a `relay mcp` process under gamma's own process,
    and gamma's final text is read back from its chat file (the turn reply)."""
    from relay_repl.core.envelope import Envelope
    from relay_repl.lab.stubs.script import Rule, Step, ToolCall
    from relay_repl.system.proc import ancestors, read_cmdline
    from tests.support.sessions import live_session

    for k in ("RELAY_HOME", "RELAY_TMUX_SOCKET", "GEMINI_CLI_HOME"):
        monkeypatch.setenv(k, gemini_lab.env[k])
    async with live_session([True]) as (s, gate, inbox):
        rid = s.ledger.peek_next_id(s.me.address)
        gemini_lab.stub.add_rule(NAME, Rule(match=rid, once=True, steps=[
            Step(tool=ToolCall(name="mcp__relay__relay_reply", input={"relay_id": rid, "text": "gamma via mcp"})),
            Step(text="sent it")]))
        d = await s.send(f"gemini:{NAME}", "answer by mcp", want="reply", reply_via="mcp", timeout=30)
        assert d.relay_id == rid and d.outcome == "delivered", d.summary()
        assert d.plan is not None and "mcpServers.relay" in (d.plan.reply_route or "")
        answer = await d.wait_reply(30)
        assert answer is not None, f"no reply through relay_reply: {d.summary()} {inbox.received}"
        env = Envelope.parse(answer.line)
        assert env is not None and env.body == "gamma via mcp" and env.re == rid and env.hop == 1
        assert answer.verdict is not None and answer.verdict.verdict == "verified", answer.verdict
        pid = answer.origin["verifiedPeerPid"]
        assert "mcp" in (read_cmdline(pid) or []) and gemini_lab.pid in ancestors(pid)
        turn = await s.turn_reply(d, timeout=30)
        assert turn is not None and turn.text == "sent it" and turn.kind == "gemini-cli"
    idle(gemini_lab)


def test_a_draft_makes_the_send_refuse_with_zero_keys(gemini_lab: GeminiLab):
    lab = gemini_lab
    idle(lab)
    lab.tmux("send-keys", "-t", lab.pane, "-l", "an operator draft")
    _wait(lambda: "an operator draft" in lab.tmux("capture-pane", "-p", "-t", lab.pane), "the draft on screen", 10)
    time.sleep(0.5)  # the composer's own redraw settles (cursor blink is drawn by the client, not tmux)
    before = lab.tmux("capture-pane", "-p", "-e", "-t", lab.pane)
    rc, text = relay_in_terminal(lab, ["send", f"gemini:{NAME}", "must not be typed"], 0)
    after = lab.tmux("capture-pane", "-p", "-e", "-t", lab.pane)
    assert rc == 1 and "[preflight] refused: not asked" in text and "draft" in text, text
    assert "Proceed? [y/N]" not in text  # refused before the question (issue 39), not after a y
    assert after == before
    lab.tmux("send-keys", "-t", lab.pane, "C-u")
    idle(lab)


@pytest.mark.anyio
async def test_a_gemini_still_discovering_its_mcp_server_holds_a_typed_line_and_the_lab_waits(
        gemini_lab: GeminiLab, monkeypatch):
    """GM §6 on demand (last in this module: it restarts gamma). gamma restarts with its relay MCP
    server held behind a gate. Idle on screen with its chat file, it is not lab-ready (the server has
    not answered tools/list). A line sent then is typed and Enter pressed, and Gemini queues it: the
    delivery stays pending (submitted, no chat record), its after-Enter screen says held. A second send
    is refused at preflight (`queue-held`) with the pane byte-identical. Once the gate opens the
    server answers, the held line reaches the chat file exactly, and the lab's readiness says ready."""
    from relay_repl.agents.gemini_cli.chats import find_chat, typed_records
    from relay_repl.agents.gemini_cli.screen import classify, footer_session
    from relay_repl.agents.screens.model import Snapshot
    from relay_repl.core.delivery import DeliveryState
    from relay_repl.system.proc import pid_alive
    from tests.support.sessions import live_session

    lab = gemini_lab
    kind = kind_for("gemini-cli")
    assert kind is not None
    home = lab.root / "home"
    settings = home / ".gemini" / "settings.json"
    gate, go = lab.root / "mcp-gate", lab.root / "mcp-go"
    gate.write_text(f'#!/bin/sh\n# hold the MCP server until the test opens the gate (at most 120 s)\ni=0\n'
                    f'while [ ! -e {shlex.quote(str(go))} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n'
                    'exec "$@"\n')
    gate.chmod(0o755)
    original = settings.read_text()
    data = json.loads(original)
    server = data["mcpServers"]["relay"]
    server["args"], server["command"] = [server["command"], *server["args"]], str(gate)
    settings.write_text(json.dumps(data))
    ctx = LabContext(root=lab.root, home=home, bin_dir=lab_binary("gemini-cli").parent, logs=lab.root,
                     api_key="stub-key", mcp_command=(str(VENV_BIN / "relay"), "mcp"))
    try:
        # the old gamma ends first, all of it: a Gemini worker that outlived its pane would be a second
        # live session of project gamma, and two make `gemini:gamma` ambiguous (GM address rule)
        old = [int(p) for p in subprocess.run(["pgrep", "-P", str(lab.pid)], capture_output=True,
                                               text=True).stdout.split()] + [lab.pid]
        for p in old:
            try:
                os.kill(p, 15)
            except OSError:
                pass
        _wait(lambda: not any(pid_alive(p) for p in old), "the old gamma's processes gone", 30)
        lab.tmux("respawn-pane", "-k", "-t", lab.pane)
        pid = int(lab.tmux("display", "-p", "-t", lab.pane, "#{pane_pid}").strip())

        def screen() -> str:
            return lab.tmux("capture-pane", "-p", "-t", lab.pane)

        def idle_with_chat():  # noqa: ANN202 - what the lab's readiness read before GM §6
            snap = Snapshot(lines=screen().split("\n"))
            sid = footer_session(snap)
            return find_chat(home / ".gemini", sid) if sid and classify(snap).kind == "idle" else None

        chat = _wait(idle_with_chat, "the restarted gamma idle with its chat file", 90, screen)
        assert kind.lab_driver().ready(ctx, NAME, LabPane(pane_id=lab.pane, pane_pid=pid, screen=screen())) is None
        for k in ("RELAY_HOME", "RELAY_TMUX_SOCKET", "GEMINI_CLI_HOME"):
            monkeypatch.setenv(k, lab.env[k])
        async with live_session([True, True]) as (s, _gate, _inbox):
            d = await s.send(f"gemini:{NAME}", "held until the mcp server answers", timeout=8)
            assert d.outcome == "pending" and d.state is DeliveryState.SUBMITTED, d.summary()
            assert d.plan is not None
            payload = d.plan.payload
            after = [e.detail for e in d.evidence if e.stage == "screen"]
            assert after and "not sent to the model yet" in after[-1], after
            assert typed_records(chat.path, 0, payload) == []
            before = lab.tmux("capture-pane", "-p", "-e", "-t", lab.pane)
            d2 = await s.send(f"gemini:{NAME}", "must not be typed", timeout=5)
            assert d2.outcome == "refused" and d2.stage == "preflight" and "queue-held" in (d2.reason or ""), \
                d2.summary()
            assert lab.tmux("capture-pane", "-p", "-e", "-t", lab.pane) == before
        go.touch()
        _wait(lambda: typed_records(chat.path, 0, payload), "the held line in gamma's chat file", 60, screen)
        assert _wait(lambda: kind.lab_driver().ready(ctx, NAME, LabPane(pane_id=lab.pane, pane_pid=pid, screen=screen())),
                     "the lab's readiness once the server answered", 30, screen)
        idle(lab)
    finally:
        settings.write_text(original)
        go.touch()
