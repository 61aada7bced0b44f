"""What a cold `relay send claude:NAME ...` loads and reads before its plan is on screen (issue 40).

The plan is what the operator waits for (goal <= 200 ms, bench/oneliners.py): discovery of only the
kind the spec names, no listing process where Claude's own rule decides, no host channel for a spec
that names no host, and none of the other kinds' files read. The probe stops at the gate, the
moment the plan is shown, and reports the modules loaded and the files opened by then."""

from __future__ import annotations

import ast
import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

from relay_repl.system.proc import proc_start

PROBE = """
import gc, importlib.machinery, os, sys
opened, spawned, collections, models = [], [], [0], []
def hook(event, args):
    if event == "open" and isinstance(args[0], str):
        opened.append(args[0])
    elif event in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
        spawned.append([str(a) for a in list(args[1])[:3]])
        models.append("pydantic" in sys.modules)  # spawned before the models were loaded, or after
sys.addaudithook(hook)
gc.callbacks.append(lambda phase, info: phase == "start" and collections.__setitem__(0, collections[0] + 1))
async def at_the_plan(approve, plan, scope):
    print("PLAN", plan.target, plan.transport, file=sys.stderr, flush=True)
    print("MODULES", sorted(sys.modules), file=sys.stderr, flush=True)
    print("OPENED", opened, file=sys.stderr, flush=True)
    print("SPAWNED", spawned, file=sys.stderr, flush=True)
    print("MODELS_AT_SPAWN", models, file=sys.stderr, flush=True)
    print("GC", collections[0], gc.isenabled(), file=sys.stderr, flush=True)
    os._exit(0)
class AtThePlan:  # no importlib.abc/util: they pull importlib.resources, tempfile, shutil
    # the gate's ask replaced once gating is loaded, in the command's own import order
    def find_spec(self, name, path=None, target=None):
        if name != "relay_repl.session.core.gating":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            module.ask = at_the_plan
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, AtThePlan())
sys.argv = ["relay", *sys.argv[1:]]
from relay_repl.frontends.entry import main
import relay_repl.system.startup_gc as startup_gc
startup_gc.LIMIT = 600.0  # a loaded test machine may take over 2 s to the plan: its timer is tested on its own
collections[0] = 0  # from the command's start
sys.exit(main())
"""

NOT_BEFORE_A_CLAUDE_PLAN = {
    "relay_repl.session.remote.remote",  # a spec with no HOST/ opens no channel: its ~35 models are not built
    "websockets",  # the Codex daemon's client: Codex is not discovered for a Claude target
    "prompt_toolkit",  # the y/N prompt comes after the plan
    "relay_repl.lab.launcher",
    "relay_repl.agents.gemini_cli.kind",  # no other kind's package:
    "relay_repl.agents.codex.kind",  # issue 40: not even the one offering a transport (Codex's queue) a Claude target lacks
    "relay_repl.session.core.actions",  # session.confirm/gated: made on first use (inspect, secrets)
}


def stand_in_claude(tmp_path: Path, version: str = "2.1.332") -> Path:
    """TMP/bin/claude: a stand-in for the client that answers `--version` as Claude Code `version` does (the
    verified-client check of listing the inbox as a Claude peer). Its directory goes first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "claude"
    exe.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    exe.chmod(0o755)
    return exe


def probe_in_a_claude_world(tmp_path, *argv: str, path: str = "/usr/bin:/bin", plan: str = "claude:alpha (pid",
                            stdin: str | None = None) -> tuple[dict[str, str], dict[str, Path]]:
    """`relay ARGV...` run by PROBE, stopped at its first plan, among one live Claude session (alpha,
    its registry record and socket), one Codex thread (beta) and an empty Gemini home: the probe's
    lines by their first word, and the kinds' homes. The first plan's target starts with `plan`.
    `stdin`: what the command reads (`relay serve --stdio`'s request lines); nothing when None."""
    cfg = tmp_path / "claude"
    (cfg / "sessions").mkdir(parents=True)
    sock_path = tmp_path / "alpha.sock"
    inbox = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    inbox.bind(str(sock_path))
    inbox.listen()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (cfg / "sessions" / f"{sleeper.pid}.json").write_text(json.dumps({
            "pid": sleeper.pid, "sessionId": str(uuid.uuid4()), "cwd": "/w", "startedAt": 1,
            "procStart": proc_start(sleeper.pid), "version": "2.1.332", "peerProtocol": 1, "kind": "interactive",
            "entrypoint": "cli", "messagingSocketPath": str(sock_path), "name": "alpha", "status": "idle"}))
        codex = tmp_path / "codex"
        (codex / "thread-writer-locks").mkdir(parents=True)
        tid = str(uuid.uuid4())
        (codex / "session_index.jsonl").write_text(json.dumps({"id": tid, "thread_name": "beta"}) + "\n")
        gemini = tmp_path / "gemini-home"
        (gemini / ".gemini" / "tmp").mkdir(parents=True)
        env = {"RELAY_HOME": str(tmp_path / "relay"), "HOME": str(tmp_path), "PATH": path,
               "CLAUDE_CONFIG_DIR": str(cfg), "CODEX_HOME": str(codex), "GEMINI_CLI_HOME": str(gemini),
               "RELAY_TMUX_SOCKET": f"relay-test-none-{uuid.uuid4().hex[:8]}"}
        cp = subprocess.run([sys.executable, "-c", PROBE, *argv], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, **({"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin}))
    finally:
        sleeper.kill()
        sleeper.wait()
        inbox.close()
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in cp.stderr.splitlines() if " " in ln}
    assert lines.get("PLAN", "").startswith(plan), cp.stderr[-3000:]
    return lines, {"claude": cfg, "codex": codex, "gemini": gemini}


def test_a_cold_send_to_claude_discovers_only_claude_before_its_plan(tmp_path):
    lines, homes = probe_in_a_claude_world(tmp_path, "send", "claude:alpha", "hello from the cold test")
    assert lines["PLAN"].endswith(" claude-code-socket")
    loaded = set(ast.literal_eval(lines["MODULES"]))
    assert "relay_repl.core.plan" in loaded  # the probe saw the send's own imports
    assert {m for m in loaded if m.split(".")[0] in {"websockets", "prompt_toolkit"} or m in NOT_BEFORE_A_CLAUDE_PLAN} == set()
    # issue 40: the command's own module and what it calls, not the other subcommands' (frontends/cli.py)
    assert {m for m in loaded if m.startswith("relay_repl.frontends.commands.")} <= {
        f"relay_repl.frontends.commands.{m}" for m in ("send", "common", "hosts")}
    opened = ast.literal_eval(lines["OPENED"])
    assert [p for p in opened if p.startswith((str(homes["codex"]), str(homes["gemini"])))] == []  # no other kind's discovery
    assert any(p.startswith(str(homes["claude"] / "sessions")) for p in opened)  # Claude's own was read
    assert [a for a in ast.literal_eval(lines["SPAWNED"]) if a[1:3] == ["agents", "--json"]] == []  # its rule decided


def test_a_cold_send_collects_no_garbage_before_its_plan_and_collects_again_once_it_is_shown(tmp_path):
    """issue 40: the collector scanned the start's objects ~85 times before a send's plan (~12 ms of
    its CPU); it is paused from the command's start (frontends/entry.py, system/startup_gc.py) and
    enabled again when the plan is shown, before the operator is asked."""
    lines, _ = probe_in_a_claude_world(tmp_path, "send", "claude:alpha", "hello from the cold test")
    assert lines["GC"] == "0 True"
