"""`relay targets` with no remote hosts lists without an event loop (system/loopless.py): importing
asyncio (ssl, concurrent.futures, logging), anyio and its asyncio backend was about a quarter of the
cold start's CPU, measured against `claude agents --json` alone (issue 20 item 4). The listing it
prints must be the one the async discovery (the REPL's refresh) finds."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from relay_repl.system import loopless

TARGETS_PROBE = """
import os, sys
real_exit = os._exit
def probe(code):  # relay targets leaves by os._exit: look at what was imported just before
    print("LOADED", [m for m in ("asyncio", "ssl", "anyio") if m in sys.modules], file=sys.stderr, flush=True)
    real_exit(code)
os._exit = probe
sys.argv = ["relay", "targets", "--json"]
from relay_repl.frontends.entry import main
main()
"""


def _codex_home(root: Path, threads: int) -> tuple[Path, list[Path]]:
    """A CODEX_HOME with `threads` named threads, their rollouts and writer locks."""
    home = root / "codex"
    (home / "thread-writer-locks").mkdir(parents=True)
    day = home / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    locks = []
    with open(home / "session_index.jsonl", "w") as idx:
        for i in range(threads):
            tid = str(uuid.uuid4())
            idx.write(json.dumps({"id": tid, "thread_name": f"t{i}", "updated_at": "2026-11-30T10:00:00Z"}) + "\n")
            (day / f"rollout-2026-11-30T10-00-00-{tid}.jsonl").write_text(
                json.dumps({"type": "session_meta", "payload": {"id": tid, "cwd": "/w", "cli_version": "0.1.0"}}) + "\n")
            lock = home / "thread-writer-locks" / f"{tid}.lock"
            lock.touch()
            locks.append(lock)
    return home, locks


def _env(tmp_path: Path, relay_home: Path, codex: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\necho '[]'\n")
    claude.chmod(0o755)
    (tmp_path / "claude-config" / "sessions").mkdir(parents=True, exist_ok=True)
    return {"HOME": str(tmp_path), "RELAY_HOME": str(relay_home), "PATH": f"{bin_dir}:/usr/bin:/bin",
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "CODEX_HOME": str(codex), "LANG": "C.UTF-8",
            "TMUX": "", "RELAY_TMUX_SOCKET": f"relay-test-none-{uuid.uuid4().hex[:8]}"}


def test_relay_targets_imports_no_event_loop(tmp_path, relay_home):
    codex, _ = _codex_home(tmp_path, 2)
    r = subprocess.run([sys.executable, "-c", TARGETS_PROBE], cwd=tmp_path, env=_env(tmp_path, relay_home, codex),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "LOADED []" in r.stderr, (r.stdout, r.stderr[-2000:])
    listed = json.loads(r.stdout)
    assert sorted(t["name"] for t in listed if t["kind"] == "codex") == ["t0", "t1"], listed


def test_the_loopless_listing_is_the_async_one(tmp_path, relay_home, monkeypatch):
    """Same providers, same files, one thread's lock really held (by this process, so its
    client version comes from a real `--version` subprocess): the same targets either way."""
    codex, locks = _codex_home(tmp_path, 3)
    for k, v in _env(tmp_path, relay_home, codex).items():
        monkeypatch.setenv(k, v)
    from relay_repl.agents import default_providers
    from relay_repl.agents.discovery import discover_all

    with open(locks[0], "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)

        async def listing() -> list:
            return await discover_all(default_providers())

        loopless_found = loopless.run(listing)
        async_found = anyio.run(listing)
    # Gemini CLI sessions are found by scanning every process on the machine, where other
    # sessions come and go between the two listings: the comparison is of the files' kinds
    def dumped(found: list) -> list:
        return [t.model_dump(mode="json") for t in found if t.kind in ("codex", "claude-code")]

    assert dumped(loopless_found) == dumped(async_found)
    assert sum(t.live for t in loopless_found if t.kind in ("codex", "claude-code")) == 1  # not another lab's Gemini
    assert {t.name for t in loopless_found if t.kind == "codex"} == {"t0", "t1", "t2"}


def test_a_coroutine_that_suspends_is_run_again_under_an_event_loop():
    runs: list[bool] = []

    async def needs_a_loop() -> str:
        runs.append(loopless.active())
        await anyio.sleep(0)  # not routed through loopless: it suspends
        return "done"

    assert loopless.run(needs_a_loop) == "done"
    assert runs == [True, False]


def test_blocking_steps_run_in_place_and_time_out_as_anyio_does():
    async def steps() -> tuple[int, bytes]:
        got = await loopless.to_thread(lambda a, b: a + b, 2, 3)
        cp = await loopless.run_process(["sh", "-c", "echo hi"], timeout=10)
        return got, cp.stdout

    assert loopless.run(steps) == (5, b"hi\n")
    assert anyio.run(steps) == (5, b"hi\n")

    async def slow() -> None:
        await loopless.run_process(["sleep", "5"], timeout=0.2)

    with pytest.raises(TimeoutError):
        loopless.run(slow)
    with pytest.raises(TimeoutError):
        anyio.run(slow)


BUILT_PROBE = """
import os, sys
real_exit = os._exit
def probe(code):
    from pydantic import BaseModel
    seen, todo = [], [BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("relay_repl") and sub.__pydantic_complete__:
                seen.append(sub.__name__)
    print("BUILT", sorted(set(seen)), file=sys.stderr, flush=True)
    real_exit(code)
os._exit = probe
sys.argv = ["relay", "targets", "--json"]
from relay_repl.frontends.entry import main
main()
"""


def test_a_listing_builds_no_model_it_does_not_validate(tmp_path, relay_home):
    """A pydantic model's schema build is CPU on `relay targets`' cold start, measured against
    `claude agents --json` (issue 20 item 4): models a listing never validates are built on first
    use instead (defer_build), the adapter's parts inside AdapterSpec's own build, and a kind's
    detail only when a target of that kind is listed (here no Claude session). Gemini's models are
    not asserted: its sessions are found among every process on the machine, where another
    lab's Gemini CLI may run."""
    codex, _ = _codex_home(tmp_path, 2)
    r = subprocess.run([sys.executable, "-c", BUILT_PROBE], cwd=tmp_path, env=_env(tmp_path, relay_home, codex),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    line = next((ln for ln in r.stderr.splitlines() if ln.startswith("BUILT ")), "")
    built = set(json.loads(line.removeprefix("BUILT ").replace("'", '"'))) if line else set()
    assert {"Target", "CodexDetail", "AdapterSpec"} <= built, (built, r.stderr[-2000:])
    never = {"AgentDetail", "PaneDetail", "ClaudeDetail", "Me", "ScreenSpec", "RegistrySpec", "TransportSpec",
             "ListingSpec", "Latency", "TranscriptScan", "RolloutTurn", "OriginRecord"}
    assert not built & never, sorted(built & never)


TOKENIZE_PROBE = """
import os, sys, tokenize
calls = []
real_tokenize = tokenize._tokenize
tokenize._tokenize = lambda *a, **k: calls.append(1) or real_tokenize(*a, **k)
real_exit = os._exit
def probe(code):
    print("TOKENIZED", len(calls), file=sys.stderr, flush=True)
    real_exit(code)
os._exit = probe
sys.argv = ["relay", "targets", "--json"]
from relay_repl.frontends.entry import main
main()
"""


def test_a_listing_tokenizes_no_source(tmp_path, relay_home):
    """A model field whose default_factory is a builtin (`list`) makes pydantic read the builtin's
    text signature through tokenize, whose first use compiles its pseudo-token regex: ~7 ms of a
    cold `relay targets` for one empty default in the adapter spec (issue 20 item 4)."""
    codex, _ = _codex_home(tmp_path, 2)
    r = subprocess.run([sys.executable, "-c", TOKENIZE_PROBE], cwd=tmp_path, env=_env(tmp_path, relay_home, codex),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "TOKENIZED 0" in r.stderr, r.stderr[-2000:]
