"""`relay targets`' plain listing (targets_plain.py, agents/<kind>/plain_listing.py) against the
models' listing (the providers, Target): the same table and the same `--json` bytes on every
fixture, the plain path taken wherever it accepts the registry exactly, the models' otherwise.

Each case builds a real registry (real processes and /proc start times, real files, a real tmux
server on a private socket) with the test_claude_listing_rule cases: a killed session, a zombie,
a reused pid, two records with one name, waiting/shell states, a legacy pid-<n>.json, odd files,
wrong types, plus a record named for another pid, a record the model would coerce, and Codex and
Gemini fixtures. Live in the lab: tests/agents/test_claude_listing_rule_live.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from relay_repl.agents import default_providers
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code.plain_listing import DETAIL, RECORD_STRINGS
from relay_repl.agents.claude_code.provider import SessionRecord
from relay_repl.agents.discovery import discover_all
from relay_repl.core.target import Target, format_targets
from relay_repl.core.target_row import FIELDS
from relay_repl.frontends.commands.targets import _target_json
from relay_repl.frontends.targets_plain import listing, listing_json, plain_rows
from relay_repl.system import loopless
from tests.agents.test_claude_listing_rule import CASES, UNDECIDED, put, record, spawn  # noqa: F401 (a fixture)
from tests.agents.test_codex_registry import daemon, holders, home  # noqa: F401 (fixtures)


def models_listing() -> tuple[str, str]:
    """(table, --json) as the models' path prints them, from os.environ."""
    targets = loopless.run(lambda: discover_all(default_providers()))
    return format_targets(targets), json.dumps([_target_json(t) for t in targets], indent=1)


def plain_listing(kind: str = "claude-code") -> tuple[str, str] | None:
    """(table, --json) as the plain path prints them, when `kind`'s plain listing answered (the other
    kinds' models list the rest), else None."""
    from relay_repl.core.target_row import format_targets as table

    if dict(plain_rows())[kind] is None:
        return None
    found = listing()
    assert found is not None
    return table(found), listing_json(found)


def hybrid() -> tuple[str, str]:
    """What `relay targets` prints: each kind plain where it answered, through its models where not."""
    from relay_repl.core.target_row import format_targets as table

    found = listing()
    assert found is not None
    return table(found), listing_json(found)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A private Claude config dir, no Codex home, a private tmux server with one pane (its pid given)."""
    cfg = tmp_path / "claude"
    (cfg / "sessions").mkdir(parents=True)
    sock = f"relay-plain-{uuid.uuid4().hex[:8]}"
    for k in ("TMUX", "RELAY_ADAPTERS_DIR", "RELAY_LAB_DIR", "RELAY_FIDELITY_CANDIDATE", "CLAUDE_CODE_MESSAGING_SOCKET"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RELAY_HOME", str(tmp_path / "relay"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no claude: the models' path never runs the listing
    monkeypatch.setenv("RELAY_TMUX_SOCKET", sock)
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "plain", "sleep 600"], check=True)
    pane_pid = int(subprocess.run(["tmux", "-L", sock, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True,
                                  check=True).stdout.split()[0])
    yield cfg / "sessions", pane_pid
    subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def in_a_pane(s: Path, pane_pid: int) -> None:
    put(s, f"{pane_pid}.json", record(pane_pid, "panes", messagingSocketPath="/nonexistent/x.sock"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_plain_listing_prints_what_the_models_print(case, world, spawn):
    sessions, pane_pid = world
    CASES[case](sessions, spawn)
    in_a_pane(sessions, pane_pid)
    plain = plain_listing()
    if case == "wrong_types":  # a record the model refuses: its words, so Claude's models list it
        assert plain is None
        assert hybrid() == models_listing()
        return
    assert plain is not None, "the plain path refused a registry it accepts"
    table, js = models_listing()
    assert plain == (table, js)
    assert re.search(rf"^claude:panes +{pane_pid} +idle +%\d+ ", table, re.M), table  # the pane was rostered, both ways


def other_pid_record(s: Path, spawn: Callable) -> None:
    p, q = spawn(), spawn()
    put(s, f"{p.pid}.json", record(q.pid, "elsewhere", procStart="1"))  # named for another pid: stale, both ways


def coerced_record(s: Path, spawn: Callable) -> None:
    p = spawn()
    put(s, f"{p.pid}.json", {**record(p.pid, "coerced"), "pid": float(p.pid)})  # 123.0: the model takes it as 123


def unreadable_record(s: Path, spawn: Callable) -> None:
    p = spawn()
    put(s, f"{p.pid}.json", record(p.pid, "secret"))
    os.chmod(s / f"{p.pid}.json", 0)


MORE = {"other_pid": (other_pid_record, True), "coerced": (coerced_record, False),
        **{f"undecided_{k}": (f, False) for k, f in UNDECIDED.items()}}
if os.geteuid() != 0:  # root reads a mode-0 file
    MORE["unreadable"] = (unreadable_record, True)


@pytest.mark.parametrize("case", sorted(MORE))
def test_records_the_plain_path_takes_or_leaves_print_alike(case, world, spawn):
    sessions, _ = world
    write, taken = MORE[case]
    write(sessions, spawn)
    plain = plain_listing()
    assert (plain is not None) == taken
    assert hybrid() == models_listing()
    if plain is not None:
        assert plain == models_listing()


def test_a_gemini_session_of_ours_leaves_the_listing_to_the_models(world, spawn, tmp_path):
    """Its state is the screen classifier's (pydantic models): what is left of issue 40."""
    sessions, _ = world
    CASES["live"](sessions, spawn)
    assert plain_listing() is not None
    node = tmp_path / "bin" / "node"
    node.parent.mkdir()
    node.symlink_to(sys.executable)  # comm `node`, argv naming Gemini CLI's bundle: what the provider looks for
    master, slave = os.openpty()  # a session reads a terminal; its Gemini home is ours
    gem = subprocess.Popen([str(node), "-c", "import time; time.sleep(60)",
                            "/x/node_modules/@google/gemini-cli/bundle/gemini.js"], stdin=slave,
                           env={**os.environ, "GEMINI_CLI_HOME": os.environ["GEMINI_CLI_HOME"]})
    os.close(slave)
    try:
        for _ in range(100):  # until its argv is the interpreter's, not the fork's
            if "gemini.js" in Path(f"/proc/{gem.pid}/cmdline").read_text():
                break
            import time

            time.sleep(0.02)
        assert plain_listing("gemini-cli") is None and plain_listing() is not None
        assert hybrid() == models_listing()  # Claude's rows plain, Gemini's through its models
        assert re.search(rf"^gemini:\S+ +{gem.pid} ", hybrid()[0], re.M), hybrid()[0]  # listed, by its models
    finally:
        gem.kill()
        gem.wait()
        os.close(master)
    assert plain_listing() is not None
    assert plain_listing() == models_listing()


@pytest.mark.anyio
async def test_codex_threads_list_alike_both_ways(world, spawn, home, holders, daemon, tmp_path, monkeypatch):
    """Daemon-held threads (idle, busy, waiting, a goal), a thread in a pane its footer names, a
    `--no-daemon` TUI holder, a free lock, a helper thread: the same table and --json bytes. A thread
    whose rollout must be found by walking sessions/ is left to the models."""
    import anyio

    from tests.agents.test_codex_registry import (T1, T2, T3, T4, fake_codex_bin, goals_db, index, lock, mark_daemon,
                                                  rollout, state_db)

    sessions, _ = world
    CASES["live"](sessions, spawn)
    monkeypatch.setenv("CODEX_HOME", str(home))
    for t in (T1, T2, T3, T4):
        lock(home, t)
    state_db(home, [{"id": t, "rollout_path": str(rollout(home, t)), "updated_at": 1, "source": "cli", "cwd": "/work",
                     "title": f"title {t[:4]}", "archived": 0, "thread_source": "user", "name": None}
                    for t in (T1, T2, T3, T4)])
    index(home, (T1, "relay-a"), (T2, "busy-one"), (T3, "asks"))
    goals_db(home, [(T2, "active", "keep going")])
    dpid = holders(*(home / "thread-writer-locks" / f"{t}.lock" for t in (T1, T2, T3)))
    mark_daemon(home, dpid)
    await daemon({T1: {"type": "idle"}, T2: {"type": "active", "activeFlags": []},
                  T3: {"type": "active", "activeFlags": ["waitingOnApproval"]}})
    codex = fake_codex_bin(tmp_path)
    sock = os.environ["RELAY_TMUX_SOCKET"]
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-s", "cx", f"{codex} relay-a"], check=True)
    for _ in range(100):
        shot = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "cx"], capture_output=True, text=True).stdout
        if "/work · relay-a" in shot:
            break
        await anyio.sleep(0.05)

    plain = await anyio.to_thread.run_sync(plain_listing, "codex")  # blocking clients: the fake daemon answers on this loop
    assert plain is not None, "the plain path refused a Codex home it accepts"
    models = await anyio.to_thread.run_sync(models_listing)
    assert plain == models
    assert re.search(r"^codex:relay-a +\d+ +idle +%\d+ ", models[0], re.M), models[0]  # the footer's pane, both ways
    assert re.search(r"^codex:busy-one +\d+ +never-idle ", models[0], re.M) and "codex:asks" in models[0]
    assert re.search(r"^codex:title 01a2 +- +STALE ", models[0], re.M)  # T4: a free lock

    (home / "thread-writer-locks" / "01a22c47-ffff-7921-9dbe-4cd6565cd35e.lock").touch()  # no row, no rollout
    assert await anyio.to_thread.run_sync(plain_listing, "codex") is None  # found by walking sessions/: the models
    assert await anyio.to_thread.run_sync(lambda: listing_json(listing())) == (await anyio.to_thread.run_sync(models_listing))[1]


def test_the_plain_shapes_are_the_models_shapes():
    """What the plain path hard-codes of the models: Target's fields, ClaudeDetail's fields and
    defaults, SessionRecord's string fields. A field added to a model fails this first."""
    assert FIELDS == tuple(Target.model_fields)
    assert DETAIL == tuple((k, f.default) for k, f in ClaudeDetail.model_fields.items())
    assert set(RECORD_STRINGS) == {k for k, f in SessionRecord.model_fields.items() if f.annotation == (str | None)}
    assert set(SessionRecord.model_fields) == {"pid", "procStart", *RECORD_STRINGS}
    from relay_repl.agents.codex.detail import CodexDetail
    from relay_repl.agents.codex.kind import CodexKind
    from relay_repl.agents.codex.plain_listing import DETAIL as CODEX_DETAIL
    from relay_repl.agents.codex.threads import VERSION_ENV

    assert tuple((k, d) for k, d, _ in CODEX_DETAIL) == tuple((k, f.default) for k, f in CodexDetail.model_fields.items())
    assert dict(CodexKind.facts.version_env) == VERSION_ENV
