#!/usr/bin/env python3
"""Live proof of the stub model servers against the REAL pinned Claude Code and Codex CLIs.

Run from the repo root:  .venv/bin/python bench/probe_stubs_live.py [--bin-dir DIR] [--keep]

It starts `python -m relay_repl.lab.stubs` and, in a private tmux server (`-L stubprobe-<pid>`)
with throwaway dirs under /tmp/stubprobe-<pid>/, two Claude sessions and one Codex session,
each pointed at its own stub port. Then it checks, with timings:
  Claude  a) a typed message gets the stub's reply on screen
          b) SLOW8 keeps the registry `busy` ~8 s, then `idle`
          c) a scripted Bash tool call runs (touches a file) with no dialog
          d) alpha's model does ToolSearch -> SendMessage to "beta"; beta's stub and beta's
             transcript (origin.kind == "peer") see it
  Codex   a) reply visible  b) SLOW8 shows `esc to interrupt` then idle
          c) a scripted exec_command runs (touches a file) with no approval dialog
Everything it started is stopped by pid and its dirs removed, unless --keep.
Prints one JSON summary; exit 0 only if every check passed. Nothing leaves loopback.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from relay_repl.lab.stubs.client import SyncStubClient  # noqa: E402

KEY = "sk-ant-api03-stubprobe-abcdefghijklmnopqrstuvwxyz0123456789"
CLAUDE_FLAGS = ["--permission-mode", "acceptEdits", "--allowedTools", "Bash SendMessage ListAgents ToolSearch"]


def wait(cond: Callable[[], Any], timeout: float, what: str, step: float = 0.05) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")


class Probe:
    def __init__(self, bin_dir: Path, keep: bool) -> None:
        self.root = Path(f"/tmp/stubprobe-{os.getpid()}")
        self.tmux = ["tmux", "-L", f"stubprobe-{os.getpid()}", "-f", "/dev/null"]
        self.bin = bin_dir
        self.keep = keep
        self.results: dict[str, Any] = {}
        self.stub: subprocess.Popen[bytes] | None = None
        self.codex_env: dict[str, str] | None = None
        self.have_tmux = False

    # --- plumbing -------------------------------------------------------------------------
    def sh(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), capture_output=True, text=True, **kw)

    def launch(self, name: str, cwd: Path, env: dict[str, str], argv: list[str]) -> None:
        envargs = [f"{k}={v}" for k, v in env.items()]
        cmd = ["new-session", "-d", "-s", name, "-x", "160", "-y", "45", "-c", str(cwd), "env", *envargs, *argv]
        self.sh(*self.tmux, *cmd, check=True)
        self.have_tmux = True

    def screen(self, name: str) -> str:
        return self.sh(*self.tmux, "capture-pane", "-p", "-t", name).stdout

    def type(self, name: str, text: str) -> float:
        self.sh(*self.tmux, "send-keys", "-t", name, "-l", text, check=True)
        time.sleep(0.3)  # Codex treats text+Enter in one burst as a paste
        t0 = time.time()
        self.sh(*self.tmux, "send-keys", "-t", name, "Enter", check=True)
        return t0

    def check(self, key: str, ok: bool, **detail: Any) -> None:
        self.results[key] = {"ok": bool(ok), **detail}
        print(f"[{'ok' if ok else 'FAIL'}] {key} {json.dumps(detail)}", file=sys.stderr, flush=True)

    # --- stub -----------------------------------------------------------------------------
    def start_stub(self) -> SyncStubClient:
        self.root.mkdir(parents=True)
        ctl, ready = self.root / "ctl.sock", self.root / "stubs.json"
        log = open(self.root / "stub.log", "wb")
        self.stub = subprocess.Popen(
            [sys.executable, "-m", "relay_repl.lab.stubs", "--control", str(ctl), "--ready-file", str(ready)],
            cwd=REPO, stderr=log,
        )
        wait(ready.exists, 10, "stub ready file")
        return SyncStubClient(ctl)

    # --- Claude ---------------------------------------------------------------------------
    def claude(self, c: SyncStubClient) -> None:
        d = self.root / "claude"
        home, cfg, tmp, work = d / "home", d / "cfg", d / "tmp", d / "work"
        for p in (home, cfg, tmp, work):
            p.mkdir(parents=True)
        (d / "run").mkdir(mode=0o700)
        self.sh("git", "init", "-q", str(work), check=True)
        dot = {
            "hasCompletedOnboarding": True, "lastOnboardingVersion": "2.1.328", "numStartups": 1,
            "projects": {str(work): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
            "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
        }
        for p in (home, cfg):
            (p / ".claude.json").write_text(json.dumps(dot))
        sessions = cfg / "sessions"

        def record(name: str) -> dict[str, Any] | None:
            for f in glob.glob(str(sessions / "*.json")):
                try:
                    r = json.loads(Path(f).read_text())
                except (OSError, ValueError):
                    continue
                if r.get("name") == name:
                    return r
            return None

        for name in ("alpha", "beta"):
            info = c.add_session(name, "anthropic")
            env = {
                "HOME": str(home), "CLAUDE_CONFIG_DIR": str(cfg), "ANTHROPIC_API_KEY": KEY,
                "ANTHROPIC_BASE_URL": info.base_url, "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "TMPDIR": str(tmp),
                "XDG_RUNTIME_DIR": str(d / "run"), "TERM": "xterm-256color",
            }
            t0 = time.time()
            self.launch(name, work, env, [str(self.bin / "claude"), "-n", name, *CLAUDE_FLAGS,
                                          "--debug-file", str(d / f"{name}.log")])
            wait(lambda: (record(name) or {}).get("status") == "idle", 30, f"claude {name} idle")
            wait(lambda: "❯\u00a0" in self.screen(name), 30, f"claude {name} composer")
            self.results[f"claude.{name}.time_to_idle_s"] = round(time.time() - t0, 2)

        # a) reply on screen
        t0 = self.type("alpha", "hello from the probe")
        wait(lambda: "ack: hello from the probe" in self.screen("alpha"), 20, "claude reply")
        self.check("claude.a_reply", True, seconds=round(time.time() - t0, 3))

        # b) SLOW8: registry busy -> idle
        wait(lambda: record("alpha")["status"] == "idle", 20, "alpha idle")
        t0 = self.type("alpha", "SLOW8 busy probe")
        wait(lambda: record("alpha")["status"] == "busy", 5, "alpha busy", 0.02)
        busy_at = time.time() - t0
        spinner = "esc to interrupt" in self.screen("alpha")
        wait(lambda: record("alpha")["status"] == "idle", 30, "alpha idle after SLOW8", 0.02)
        idle_at = time.time() - t0
        self.check("claude.b_slow8", 7.5 < idle_at < 11 and spinner, busy_after_s=round(busy_at, 2),
                   idle_after_s=round(idle_at, 2), spinner_seen=spinner)

        # c) Bash runs with no dialog (outside the cwd too)
        target = self.root / "claude-bash-ran.txt"
        c.tool_call("alpha", "Bash", {"command": f"touch {target}", "description": "probe touch"},
                    then_text="bash done", match="TOUCHME")
        t0 = self.type("alpha", "TOUCHME please")
        dialog = False

        def touched() -> bool:
            nonlocal dialog
            dialog = dialog or "Do you want to proceed" in self.screen("alpha")
            return target.exists()

        wait(touched, 20, "bash touch")
        wait(lambda: "bash done" in self.screen("alpha"), 20, "bash turn end")
        self.check("claude.c_bash", not dialog, seconds=round(time.time() - t0, 3))

        # d) alpha -> beta by native SendMessage
        c.send_message("alpha", "beta", "hello beta from the probe", match="PINGBETA", then_text="sent to beta")
        c.clear_requests("beta")
        t0 = self.type("alpha", "PINGBETA now")
        recs = c.requests("beta", kind="main", min_count=1, timeout=30, body=False)
        arrived = time.time() - t0
        beta_sid = record("beta")["sessionId"]

        def peer_origins() -> list[dict[str, Any]]:
            found = []
            for f in glob.glob(str(cfg / "projects" / "*" / f"{beta_sid}.jsonl")):
                for line in Path(f).read_text().splitlines():
                    rec = json.loads(line)
                    o = rec.get("origin") or (rec.get("attachment") or {}).get("origin")
                    if o and o.get("kind") == "peer":
                        found.append(o)
            return found

        try:
            origins = wait(peer_origins, 10, "beta transcript origin")
        except TimeoutError:
            origins = []
        alpha_steps = [r.answered_by for r in c.requests("alpha", kind="main", body=False)][-3:]
        self.check("claude.d_sendmessage",
                   bool(recs) and "hello beta from the probe" in recs[0].last_text
                   and any(o and o.get("name") == "alpha" for o in origins),
                   beta_stub_after_s=round(arrived, 3), alpha_steps=alpha_steps,
                   beta_origin=origins[-1] if origins else None)
        for name in ("alpha", "beta"):
            self.type(name, "/exit")

    # --- Codex ----------------------------------------------------------------------------
    def codex(self, c: SyncStubClient) -> None:
        d = self.root / "codex"
        home, chome, work = d / "home", d / "codex-home", d / "work"
        for p in (home, chome, work):
            p.mkdir(parents=True)
        self.sh("git", "init", "-q", str(work), check=True)
        info = c.add_session("cx", "openai")
        (chome / "config.toml").write_text(f"""model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake stub"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 600000

[projects."{work}"]
trust_level = "trusted"

[analytics]
enabled = false

[features]
enable_request_compression = false
""")
        env = {"CODEX_HOME": str(chome), "HOME": str(home), "FAKE_API_KEY": "stub", "TERM": "xterm-256color"}
        self.codex_env = {**os.environ, **env}
        t0 = time.time()
        # the per-session port goes on the command line, so one CODEX_HOME (one daemon) can
        # serve several sessions, each on its own stub port
        self.launch("cx", work, env, [str(self.bin / "codex"), "-c", f'model_providers.fake.base_url="{info.base_url}"'])
        wait(lambda: "fake-model" in self.screen("cx"), 120, "codex footer")
        self.results["codex.time_to_ready_s"] = round(time.time() - t0, 2)

        t0 = self.type("cx", "hello codex probe")
        wait(lambda: "ack: hello codex probe" in self.screen("cx"), 30, "codex reply")
        self.check("codex.a_reply", True, seconds=round(time.time() - t0, 3))

        wait(lambda: "esc to interrupt" not in self.screen("cx"), 20, "codex idle")
        t0 = self.type("cx", "SLOW8 codex busy probe")
        wait(lambda: "esc to interrupt" in self.screen("cx"), 5, "codex busy", 0.02)
        busy_at = time.time() - t0
        wait(lambda: "esc to interrupt" not in self.screen("cx"), 30, "codex idle after SLOW8", 0.02)
        idle_at = time.time() - t0
        self.check("codex.b_slow8", 7.5 < idle_at < 11, busy_after_s=round(busy_at, 2), idle_after_s=round(idle_at, 2))

        target = self.root / "codex-exec-ran.txt"
        c.tool_call("cx", "exec_command", {"cmd": f"touch {target}"}, then_text="exec done", match="TOUCHME")
        t0 = self.type("cx", "TOUCHME please")
        dialog = False

        def touched() -> bool:
            nonlocal dialog
            dialog = dialog or "Would you like to run" in self.screen("cx")
            return target.exists()

        wait(touched, 30, "exec_command touch")
        wait(lambda: "exec done" in self.screen("cx"), 20, "codex tool turn end")
        side = [r.answered_by for r in c.requests("cx", body=False) if r.kind == "side"]
        self.check("codex.c_exec_command", not dialog, seconds=round(time.time() - t0, 3), side_requests=len(side))

    # --- cleanup --------------------------------------------------------------------------
    def cleanup(self) -> None:
        if self.have_tmux:
            self.sh(*self.tmux, "send-keys", "-t", "cx", "C-c")
            time.sleep(0.3)
            self.sh(*self.tmux, "send-keys", "-t", "cx", "C-c")
            time.sleep(1.0)
        if self.codex_env is not None:
            self.sh(str(self.bin / "codex"), "app-server", "daemon", "stop", env=self.codex_env, timeout=30)
        if self.have_tmux:
            self.sh(*self.tmux, "kill-server")
        # orphans (e.g. the daemon's pid-update-loop): processes whose argv names our root
        for pid_dir in glob.glob("/proc/[0-9]*"):
            pid = int(pid_dir.rsplit("/", 1)[1])
            if pid == os.getpid() or (self.stub and pid == self.stub.pid):
                continue
            try:
                argv = Path(pid_dir, "cmdline").read_bytes()
            except OSError:
                continue
            if str(self.root).encode() in argv:
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
        if self.stub is not None:
            self.stub.send_signal(signal.SIGTERM)
            self.stub.wait(timeout=10)
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    from relay_repl.lab.install import bin_dir

    ap.add_argument("--bin-dir", default=bin_dir(), type=Path, help="where claude and codex are (default: the lab's client cache)")
    ap.add_argument("--keep", action="store_true", help="keep /tmp/stubprobe-<pid>/ for inspection")
    ap.add_argument("--only", choices=["claude", "codex"])
    args = ap.parse_args()
    p = Probe(args.bin_dir, args.keep)
    try:
        c = p.start_stub()
        if args.only in (None, "claude"):
            p.claude(c)
        if args.only in (None, "codex"):
            p.codex(c)
    except (TimeoutError, subprocess.CalledProcessError, OSError) as exc:
        p.results["error"] = str(exc)
        print(f"probe error: {exc}", file=sys.stderr)
    finally:
        p.cleanup()
    print(json.dumps(p.results, indent=1))
    ok = "error" not in p.results and all(v.get("ok", True) for v in p.results.values() if isinstance(v, dict))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
