"""A fresh interpreter that runs a probe script as a cold `relay` start would, to see what was
imported (or spawned) by some moment: a test process has imported everything already, so only a
new one can tell. Used by the import-order tests (tests/system/test_prefetch.py,
test_pydantic_plugins.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def undecided_record(sessions: Path) -> None:
    """A registry record Claude's listing rule cannot decide in-process (a background job's, for a
    live pid: this test process), so discovery runs `claude agents --json` for it, and the prefetch
    starts that listing early (agents/claude_code/listing_rule.py)."""
    import json
    import os

    from relay_repl.system.proc import proc_start

    pid = os.getpid()
    (sessions / f"{pid}.json").write_text(json.dumps({
        "pid": pid, "procStart": proc_start(pid), "kind": "bg", "jobId": "job-1", "version": "2.1.332",
        "sessionId": "s-1", "cwd": "/w", "startedAt": 1, "name": "job", "status": "idle"}))


def run_cold_probe(tmp_path: Path, relay_home: Path, probe: str, *,
                   codex_home: bool = True, listing_needed: bool = True) -> subprocess.CompletedProcess[str]:
    """`python -c probe` in `tmp_path` with a private HOME and RELAY_HOME, and a stand-in `claude`
    first on PATH whose `agents --json` lists no session (the real one is slow and not the point).
    `codex_home=False` leaves CODEX_HOME unset, as a test that never reaches Codex had it.
    `listing_needed` (default) puts a record in the registry that only the listing decides
    (`undecided_record`), so the listing runs; False leaves the registry empty: the rule decides."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\necho '[]'\n")
    claude.chmod(0o755)
    (tmp_path / "claude-config" / "sessions").mkdir(parents=True)
    if listing_needed:
        undecided_record(tmp_path / "claude-config" / "sessions")
    env = {"HOME": str(tmp_path), "RELAY_HOME": str(relay_home), "PATH": f"{bin_dir}:/usr/bin:/bin",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "LANG": "C.UTF-8"}
    if codex_home:
        env["CODEX_HOME"] = str(tmp_path / "codex")
    return subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
