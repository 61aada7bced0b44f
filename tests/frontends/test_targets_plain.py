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
import shlex
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


GEMINI_CAPTURES = Path(__file__).parents[1] / "agents" / "screens" / "captures" / "gemini-cli-0.61.0"
BUNDLE = "node_modules/@google/gemini-cli/bundle/gemini.js"
SHOW = "import sys, time; f = open(sys.argv[2]) if len(sys.argv) > 2 else None; " \
       "sys.stdout.write(f.read().rstrip('\\n') if f else ''); sys.stdout.flush(); time.sleep(600)"


class GeminiWorld:
    """Fake Gemini CLI sessions: a `node` (this interpreter under that name) whose argv names Gemini
    CLI's bundle (a package.json beside it: version 0.61.0), reading a terminal, in a tmux pane of the
    private server (160x45) showing a recorded Gemini screen, or on a bare pty; projects.json and chat
    files under our Gemini home."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.node = tmp_path / "bin" / "node"
        self.node.parent.mkdir(exist_ok=True)
        self.node.symlink_to(sys.executable)
        pkg = tmp_path / "node_modules" / "@google" / "gemini-cli"
        (pkg / "bundle").mkdir(parents=True)
        (pkg / "bundle" / "gemini.js").touch()
        (pkg / "package.json").write_text(json.dumps({"name": "@google/gemini-cli", "version": "0.61.0"}))
        self.gdir = Path(os.environ["GEMINI_CLI_HOME"]) / ".gemini"
        self.gdir.mkdir(parents=True)
        self.sock = os.environ["RELAY_TMUX_SOCKET"]
        self.loose: list[tuple[subprocess.Popen[bytes], int]] = []
        self.projects: dict[str, str] = {}

    def project(self, name: str) -> Path:
        cwd = self.tmp / name
        cwd.mkdir(exist_ok=True)
        self.projects[str(cwd)] = name
        (self.gdir / "projects.json").write_text(json.dumps({"projects": self.projects}))
        return cwd

    def argv(self, screen: str | None) -> list[str]:
        shown = [str(GEMINI_CAPTURES / f"{screen}.txt")] if screen and "/" not in screen else [screen] if screen else []
        return [str(self.node), "-c", SHOW, str(self.tmp / BUNDLE), *shown]

    def in_pane(self, cwd: Path, screen: str | None, *, keep_dead: bool = False) -> int:
        """A session in its own tmux session (160x45) showing `screen` (a capture's name or a file); its pid."""
        name = f"g{uuid.uuid4().hex[:6]}"
        cmd = " ".join(shlex.quote(a) for a in ["env", f"GEMINI_CLI_HOME={os.environ['GEMINI_CLI_HOME']}", *self.argv(screen)])
        subprocess.run(["tmux", "-L", self.sock, "new-session", "-d", "-s", name, "-x", "160", "-y", "45",
                        "-c", str(cwd), cmd], check=True)
        if keep_dead:
            subprocess.run(["tmux", "-L", self.sock, "set-option", "-t", name, "remain-on-exit", "on"], check=True)
        pane_pid = int(subprocess.run(["tmux", "-L", self.sock, "list-panes", "-t", name, "-F", "#{pane_pid}"],
                                      capture_output=True, text=True, check=True).stdout.split()[0])
        pid = self._running(pane_pid, lambda: self._gemini_under(pane_pid))
        if screen:  # until it has drawn its screen
            self._running(pid, lambda: pid if self.screen_of(pid).strip() else None)
        return pid

    def on_a_pty(self, cwd: Path) -> subprocess.Popen[bytes]:
        master, slave = os.openpty()
        p = subprocess.Popen(self.argv(None), stdin=slave, cwd=cwd, env={**os.environ})
        os.close(slave)
        self.loose.append((p, master))
        self._running(p.pid, lambda: p.pid if "gemini.js" in Path(f"/proc/{p.pid}/cmdline").read_text() else None)
        return p

    def chat(self, project: str, sid: str) -> None:
        from datetime import UTC, datetime

        d = self.gdir / "tmp" / project / "chats"
        d.mkdir(parents=True, exist_ok=True)
        now = datetime.now(UTC)
        (d / f"session-{now:%Y-%m-%dT%H-%M}-{sid[:8]}.jsonl").write_text(json.dumps(
            {"sessionId": sid, "projectHash": "h", "startTime": now.isoformat().replace("+00:00", "Z"),
             "lastUpdated": now.isoformat(), "kind": "main"}) + "\n")

    def screen_of(self, pid: int) -> str:
        return subprocess.run(["tmux", "-L", self.sock, "capture-pane", "-p", "-t", self._pane_of(pid)],
                              capture_output=True, text=True).stdout

    def _pane_of(self, pid: int) -> str:
        out = subprocess.run(["tmux", "-L", self.sock, "list-panes", "-a", "-F", "#{pane_pid} #{pane_id}"],
                             capture_output=True, text=True, check=True).stdout
        from relay_repl.system.proc import ancestors

        by = dict(ln.split() for ln in out.splitlines())
        return next(by[str(p)] for p in ancestors(pid) if str(p) in by)

    def _gemini_under(self, pane_pid: int) -> int | None:
        from relay_repl.system.proc import descendants, process_table

        for pid in [pane_pid, *descendants(pane_pid, process_table())]:
            try:
                if "gemini.js" in Path(f"/proc/{pid}/cmdline").read_text():
                    return pid
            except OSError:
                continue
        return None

    @staticmethod
    def _running(_: int, found: Callable[[], int | None]) -> int:
        import time

        for _ in range(200):  # until its argv is the interpreter's, not the fork's
            pid = found()
            if pid is not None:
                return pid
            time.sleep(0.02)
        raise AssertionError("the fake Gemini session did not start")

    def close(self) -> None:
        for p, master in self.loose:
            if p.poll() is None:
                p.kill()
            p.wait()
            os.close(master)


@pytest.fixture
def gemini(world, tmp_path):
    g = GeminiWorld(tmp_path)
    yield g
    g.close()


def gemini_busy(g: GeminiWorld) -> dict[int, str]:
    pid = g.in_pane(g.project("proj"), "busy")
    g.chat("proj", "0a1b2c3d-0000-4000-8000-000000000001")
    return {pid: "busy"}


def gemini_idle(g: GeminiWorld) -> dict[int, str]:
    pid = g.in_pane(g.project("proj"), "after_turn")
    g.chat("proj", "0a1b2c3d-0000-4000-8000-000000000002")
    return {pid: "idle"}


def gemini_waiting(g: GeminiWorld) -> dict[int, str]:
    return {g.in_pane(g.project("proj"), "approval_dialog"): "waiting"}  # no chat file: no transport either way


def gemini_no_composer(g: GeminiWorld) -> dict[int, str]:
    odd = g.tmp / "odd.txt"
    odd.write_text("Welcome\n\nnothing here looks like Gemini's composer\n")
    return {g.in_pane(g.project("proj"), str(odd)): "unknown"}


def gemini_blank_pane(g: GeminiWorld) -> dict[int, str]:
    return {g.in_pane(g.project("proj"), None): "unknown"}  # a pane showing nothing: no screen to read


def gemini_no_pane(g: GeminiWorld) -> dict[int, str]:
    return {g.on_a_pty(g.project("proj")).pid: "unknown"}  # a terminal, but no pane: its screen unreadable


def gemini_dead(g: GeminiWorld) -> dict[int, str]:
    pid = g.in_pane(g.project("proj"), "idle_draft", keep_dead=True)
    os.kill(pid, 9)  # its pane stays, dead (remain-on-exit): no session either way
    p = g.on_a_pty(g.project("other"))
    p.kill()  # killed and not reaped: a zombie, its argv gone
    import time

    for _ in range(100):
        if Path(f"/proc/{p.pid}/stat").read_text().split(") ")[1].startswith("Z"):
            break
        time.sleep(0.02)
    return {}


def gemini_two_in_one_project(g: GeminiWorld) -> dict[int, str]:
    cwd = g.project("proj")
    a = g.in_pane(cwd, "fresh")
    b = g.in_pane(cwd, "yolo_busy")
    g.chat("proj", "0a1b2c3d-0000-4000-8000-000000000003")
    return {a: "idle", b: "busy"}


def gemini_foreign_home(g: GeminiWorld) -> dict[int, str]:
    ours = g.in_pane(g.project("proj"), "busy")
    master, slave = os.openpty()
    other = subprocess.Popen(g.argv(None), stdin=slave, env={**os.environ, "GEMINI_CLI_HOME": str(g.tmp / "elsewhere")})
    os.close(slave)
    g.loose.append((other, master))
    g._running(other.pid, lambda: other.pid if "gemini.js" in Path(f"/proc/{other.pid}/cmdline").read_text() else None)
    return {ours: "busy"}  # another Gemini home's session is listed by neither


GEMINI = {f.__name__.removeprefix("gemini_"): f for f in (
    gemini_busy, gemini_idle, gemini_waiting, gemini_no_composer, gemini_blank_pane, gemini_no_pane, gemini_dead,
    gemini_two_in_one_project, gemini_foreign_home)}


@pytest.mark.parametrize("case", sorted(GEMINI))
def test_gemini_sessions_list_plain_as_the_models_list_them(case, world, spawn, gemini):
    """Issue 40: a Gemini session of ours is listed on the standard-library path (its state read by
    the one classifier, over the plain screen values), the same table and --json bytes as its
    models; Claude's rows beside it plain too. The old code left every such listing to the models."""
    sessions, _ = world
    CASES["live"](sessions, spawn)
    states = GEMINI[case](gemini)
    plain = plain_listing("gemini-cli")
    assert plain is not None, "the plain path refused a Gemini session it reads"
    models = models_listing()
    assert plain == models, (gemini.screen_of(next(iter(states))) if states else "")
    rows = {t["pid"]: t for t in json.loads(models[1]) if t["kind"] == "gemini-cli"}
    assert {pid: t["state"] for pid, t in rows.items()} == states, models[0]
    for pid, t in rows.items():
        assert t["client_version"] == "0.61.0" and t["client_status"] == "pinned"
        assert (t["pane"] is not None) == (case != "no_pane"), t
        if t["evidence_file"]:
            assert t["transports"] == ["tmux"] and t["detail"]["session_id"], t


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
    from relay_repl.agents.gemini_cli.detail import GeminiDetail
    from relay_repl.agents.gemini_cli.plain_listing import DETAIL as GEMINI_DETAIL

    assert GEMINI_DETAIL == tuple((k, f.default) for k, f in GeminiDetail.model_fields.items())
    assert dict(CodexKind.facts.version_env) == VERSION_ENV
