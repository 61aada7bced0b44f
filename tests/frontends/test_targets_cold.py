"""What a cold `relay targets` imports: only what a listing needs (issue 20 item 4).

`relay targets` cold is measured against `claude agents --json` alone (bench/targets.py,
goal <= 1.2x), and on two cores relay's own CPU competes with that listing. The reply plans,
envelopes, screen models, turn-reply readers and transcripts are ~50 pydantic models and
their modules that a listing never uses: they must load on first use, not on this path."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import uuid
from pathlib import Path

# os._exit (the listing's fast exit) replaced by one that first prints the loaded modules on stderr
PROBE = """
import os, sys
real_exit = os._exit
def _exit(code):
    print("MODULES", sorted(sys.modules), file=sys.stderr, flush=True)
    built = []
    if "pydantic" in sys.modules:
        todo = list(sys.modules["pydantic"].BaseModel.__subclasses__())
        while todo:
            cls = todo.pop()
            todo += cls.__subclasses__()
            if cls.__dict__.get("__pydantic_complete__"):
                built.append(f"{cls.__module__}.{cls.__qualname__}")
    print("BUILT", sorted(set(built)), file=sys.stderr, flush=True)
    real_exit(code)
os._exit = _exit
sys.argv = ["relay", "targets", "--json"]
from relay_repl.frontends.entry import main
sys.exit(main())
"""

NOT_FOR_A_LISTING = {
    "relay_repl.core.plan", "relay_repl.core.inbound", "relay_repl.core.check", "relay_repl.core.envelope",
    "relay_repl.core.relay_ids", "relay_repl.core.turn_reply", "relay_repl.agents.turn_reply",
    "relay_repl.agents.screens.model", "relay_repl.agents.claude_code.transcript",
    # issue 40: no event loop, no WebSocket client (daemon_sync.py), no importlib.resources (tempfile, zipfile)
    "asyncio", "anyio", "websockets", "importlib.resources",
}


def test_a_cold_listing_imports_no_plan_envelope_screen_or_transcript_module(tmp_path):
    cfg = tmp_path / "claude"
    (cfg / "sessions").mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        for pid, start in ((sleeper.pid, _proc_start(sleeper.pid)), (3_900_001, "12345")):
            (cfg / "sessions" / f"{pid}.json").write_text(json.dumps({
                "pid": pid, "sessionId": str(uuid.uuid4()), "cwd": "/w", "startedAt": 1, "procStart": start,
                "version": "2.1.332", "peerProtocol": 1, "kind": "interactive", "entrypoint": "cli",
                "messagingSocketPath": f"{tmp_path}/{pid}.sock", "name": f"s{pid}", "status": "idle", "updatedAt": 1}))
        codex = tmp_path / "codex"
        (codex / "thread-writer-locks").mkdir(parents=True)
        day = codex / "sessions" / "2026" / "11" / "30"
        day.mkdir(parents=True)
        tid = str(uuid.uuid4())
        (codex / "session_index.jsonl").write_text(json.dumps({"id": tid, "thread_name": "t1", "updated_at": "2026-11-30T10:00:00Z"}) + "\n")
        (day / f"rollout-2026-11-30T10-00-00-{tid}.jsonl").write_text(json.dumps({"type": "session_meta", "payload": {"id": tid}}) + "\n")
        (codex / "thread-writer-locks" / f"{tid}.lock").touch()
        env = {"RELAY_HOME": str(tmp_path / "relay"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
               "CLAUDE_CONFIG_DIR": str(cfg), "CODEX_HOME": str(codex), "RELAY_TMUX_SOCKET": f"relay-test-none-{uuid.uuid4().hex[:8]}"}
        cp = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert cp.returncode == 0, cp.stderr
    listed = {(t["kind"], t["name"]) for t in json.loads(cp.stdout)}
    assert {("claude-code", f"s{sleeper.pid}"), ("codex", "t1")} <= listed, listed  # both kinds' listings ran
    line = next(ln for ln in cp.stderr.splitlines() if ln.startswith("MODULES "))
    loaded = set(ast.literal_eval(line.removeprefix("MODULES ")))
    assert "relay_repl.core.target" in loaded  # the probe saw the listing's own imports
    built = set(ast.literal_eval(next(ln for ln in cp.stderr.splitlines() if ln.startswith("BUILT ")).removeprefix("BUILT ")))
    assert "relay_repl.core.target.Target" in built  # the probe saw the models the listing built
    # issue 40: the rule decided every record here, so `claude agents --json` never ran: its model is not built
    assert "relay_repl.agents.claude_code.provider.ListedAgent" not in built
    assert NOT_FOR_A_LISTING & loaded == set()
    # issue 40: the command's own module only, not the other ~27 subcommands' (frontends/cli.py)
    assert {m for m in loaded if m.startswith("relay_repl.frontends.commands.")} == {
        "relay_repl.frontends.commands.targets"}


NOT_ON_THE_PLAIN_PATH = {"pydantic", "pydantic_core", "libtmux", "asyncio", "anyio", "relay_repl.agents",
                         "relay_repl.core.target", "dataclasses", "subprocess"}


def test_a_plain_listing_imports_neither_pydantic_nor_libtmux_nor_asyncio(tmp_path):
    """Issue 40: where every kind's plain listing accepts what it reads (here: Claude sessions, one of
    them in a real tmux pane, no Codex home, no Gemini session), `relay targets` lists them without
    the models: no pydantic, no libtmux, no event loop, no agents package, no dataclasses or
    subprocess (the tmux client is posix_spawned). The old code imported all of pydantic here."""
    cfg = tmp_path / "claude"
    (cfg / "sessions").mkdir(parents=True)
    sock = f"relay-cold-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "sleep 60"], check=True)
    try:
        pane_pid = int(subprocess.run(["tmux", "-L", sock, "list-panes", "-F", "#{pane_pid}"], capture_output=True,
                                      text=True, check=True).stdout.split()[0])
        for pid, start in ((pane_pid, _proc_start(pane_pid)), (3_900_001, "12345")):
            (cfg / "sessions" / f"{pid}.json").write_text(json.dumps({
                "pid": pid, "sessionId": str(uuid.uuid4()), "cwd": "/w", "startedAt": 1, "procStart": start,
                "version": "2.1.332", "peerProtocol": 1, "kind": "interactive", "entrypoint": "cli",
                "messagingSocketPath": f"{tmp_path}/{pid}.sock", "name": f"s{pid}", "status": "idle", "updatedAt": 1}))
        env = {"RELAY_HOME": str(tmp_path / "relay"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
               "CLAUDE_CONFIG_DIR": str(cfg), "CODEX_HOME": str(tmp_path / "no-codex"), "RELAY_TMUX_SOCKET": sock}
        cp = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
    assert cp.returncode == 0, cp.stderr
    listed = {t["name"]: t for t in json.loads(cp.stdout)}
    assert listed[f"s{pane_pid}"]["live"] and listed[f"s{pane_pid}"]["pane"].startswith("%")  # tmux was asked
    assert not listed["s3900001"]["live"]
    loaded = set(ast.literal_eval(next(ln for ln in cp.stderr.splitlines() if ln.startswith("MODULES "))
                                  .removeprefix("MODULES ")))
    assert "relay_repl.frontends.targets_plain" in loaded  # the probe saw the plain path
    assert NOT_ON_THE_PLAIN_PATH & loaded == set()


def test_a_plain_listing_of_a_live_gemini_session_imports_neither_pydantic_nor_libtmux(tmp_path, monkeypatch):
    """Issue 40: a Gemini session of ours (a busy one, in a real tmux pane, its chat file tied) is
    listed on the plain path too, its state read by the kind's one classifier loaded by file: still
    no pydantic, libtmux, event loop, agents package or dataclasses, and the screen values by name
    (relay_repl.agents.screens.model) not loaded either. The old code left it to the models."""
    from tests.frontends.test_targets_plain import GeminiWorld

    sock = f"relay-cold-{uuid.uuid4().hex[:8]}"
    env = {"RELAY_HOME": str(tmp_path / "relay"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "no-claude"), "CODEX_HOME": str(tmp_path / "no-codex"),
           "GEMINI_CLI_HOME": str(tmp_path / "gemini"), "RELAY_TMUX_SOCKET": sock}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("TMUX", raising=False)
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "sleep 60"], check=True)
    g = GeminiWorld(tmp_path)
    try:
        pid = g.in_pane(g.project("proj"), "busy")
        g.chat("proj", "0a1b2c3d-0000-4000-8000-00000000000c")
        cp = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    finally:
        g.close()
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
    assert cp.returncode == 0, cp.stderr
    (row,) = [t for t in json.loads(cp.stdout) if t["kind"] == "gemini-cli"]
    assert (row["pid"], row["name"], row["state"], row["transports"]) == (pid, "proj", "busy", ["tmux"]), row
    loaded = set(ast.literal_eval(next(ln for ln in cp.stderr.splitlines() if ln.startswith("MODULES "))
                                  .removeprefix("MODULES ")))
    assert "relay_repl.frontends.targets_plain" in loaded  # the probe saw the plain path
    assert any(m.endswith("gemini_cli_screen") for m in loaded), sorted(loaded)  # the classifier, loaded by file
    assert (NOT_ON_THE_PLAIN_PATH | {"relay_repl.agents.screens.model", "inspect"}) & loaded == set()


def _proc_start(pid: int) -> str:
    st = Path(f"/proc/{pid}/stat").read_text()
    return st[st.rfind(")") + 2:].split(" ")[19]
