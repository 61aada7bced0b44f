"""Claude's listing rule applied in-process (agents/claude_code/listing_rule.py) against the real
`claude agents --json` on every registry hazard: the same rows, and the same targets in relay.

Each case builds a real registry (real processes, real /proc start times, real files) and runs the
pinned `claude` binary on it (skipped when it is not installed): the rule's rows must be the
listing's own rows, and relay's discovery with the rule must give the targets it gives with the
listing. Where the rule cannot decide (a background job's record, a client version relay has not
verified) the provider must run the real listing, and the targets must still agree.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from relay_repl.agents import PaneRoster
from relay_repl.agents.claude_code import ClaudeProvider
from relay_repl.agents.claude_code.listing_rule import RuleListing, apply_rule, listing_rows, read_record_file
from relay_repl.agents.versions import is_verified
from relay_repl.system.proc import proc_start
from tests.agents.test_claude_registry import dead_pid, real_claude

pytestmark = pytest.mark.anyio


@pytest.fixture
def claude_exe() -> str:
    exe = real_claude()
    if exe is None:
        pytest.skip("claude binary not installed (set RELAY_CLAUDE_BIN or run `relay lab install`)")
    return exe


@pytest.fixture
def spawn():
    """Start `sleep` processes; `spawn(reap=False)` gives one that is killed and left a zombie."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        p = subprocess.Popen(["sleep", "600"])
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
        p.wait()


def record(pid: int, name: str, **fields) -> dict:
    rec = {"pid": pid, "sessionId": f"sess-{pid}", "cwd": "/home/user/proj", "startedAt": 1_796_034_468_903 + pid,
           "procStart": proc_start(pid) or "12345", "version": "2.1.332", "peerProtocol": 1, "kind": "interactive",
           "entrypoint": "cli", "name": name, "nameSource": "user", "status": "idle", "updatedAt": 1_796_034_469_009}
    rec.update(fields)
    return {k: v for k, v in rec.items() if v is not None}


def put(sessions: Path, fname: str, rec: dict | str) -> None:
    (sessions / fname).write_text(rec if isinstance(rec, str) else json.dumps(rec))


# -- the cases: each writes a registry under `sessions` -------------------------------------------------------


def case_live(s: Path, spawn: Callable) -> None:
    p = spawn()
    put(s, f"{p.pid}.json", record(p.pid, "alpha"))


def case_killed_session(s: Path, spawn: Callable) -> None:
    gone = dead_pid()  # SIGKILLed and reaped: its record stays, status frozen at busy (CC §1.4)
    put(s, f"{gone}.json", record(gone, "gone", procStart="4242", status="busy"))
    p = spawn()
    put(s, f"{p.pid}.json", record(p.pid, "alpha"))


def case_zombie(s: Path, spawn: Callable) -> None:
    z = spawn()
    start = proc_start(z.pid)
    os.kill(z.pid, signal.SIGKILL)  # not reaped yet: a zombie passes kill(pid, 0) and keeps its start time
    for _ in range(200):
        if (Path(f"/proc/{z.pid}/stat").read_text().split(") ")[1][:1]) == "Z":
            break
        import time

        time.sleep(0.01)
    put(s, f"{z.pid}.json", record(z.pid, "zombie", procStart=start, status="busy"))


def case_reused_pid(s: Path, spawn: Callable) -> None:
    p = spawn()
    put(s, f"{p.pid}.json", record(p.pid, "reused", procStart="1"))


def case_two_records_one_name(s: Path, spawn: Callable) -> None:
    a, b = spawn(), spawn()
    put(s, f"{a.pid}.json", record(a.pid, "alpha"))
    put(s, f"{b.pid}.json", record(b.pid, "alpha", sessionId=f"sess-{a.pid}"))  # a resumed copy


def case_waiting_and_shell(s: Path, spawn: Callable) -> None:
    w, sh, b = spawn(), spawn(), spawn()
    put(s, f"{w.pid}.json", record(w.pid, "held", status="waiting", waitingFor="permission prompt"))
    put(s, f"{sh.pid}.json", record(sh.pid, "shelled", status="shell"))  # Claude prints `busy`; relay reads idle
    put(s, f"{b.pid}.json", record(b.pid, "starting", status=None))  # before its first status write


def case_legacy_pid_file(s: Path, spawn: Callable) -> None:
    p = spawn()  # an orphaned legacy file for a LIVE pid, snake_case fields: Claude does not read it
    put(s, f"pid-{p.pid}.json", {"pid": p.pid, "session_id": f"sess-{p.pid}", "proc_start": proc_start(p.pid),
                                 "messaging_socket_path": "/tmp/none.sock", "name": "legacy", "status": "idle"})
    q = spawn()
    put(s, f"{q.pid}.json", record(q.pid, "alpha"))


def case_no_procstart(s: Path, spawn: Callable) -> None:
    p = spawn()  # Claude lists it (no start time to compare); relay's rule does not trust it
    put(s, f"{p.pid}.json", record(p.pid, "nostart", procStart=None))


def case_kinds_and_parked(s: Path, spawn: Callable) -> None:
    a, b, c, d = spawn(), spawn(), spawn(), spawn()
    put(s, f"{a.pid}.json", record(a.pid, "nokind", kind=None))
    put(s, f"{b.pid}.json", record(b.pid, "daemon", kind="daemon"))
    put(s, f"{c.pid}.json", record(c.pid, "parked", parkedJobId="job-1"))
    put(s, f"{d.pid}.json", record(d.pid, "plainbg", kind="bg"))


def case_odd_files(s: Path, spawn: Callable) -> None:
    a, b, c, d, e = spawn(), spawn(), spawn(), spawn(), spawn()
    put(s, f"0{a.pid}.json", record(a.pid, "leadingzero"))  # Claude skips (and deletes) it
    elsewhere = s.parent / "elsewhere.json"
    elsewhere.write_text(json.dumps(record(b.pid, "linked")))
    (s / f"{b.pid}.json").symlink_to(elsewhere)  # Claude reads with lstat: a symlink is skipped
    put(s, f"{c.pid}.json", json.dumps(record(c.pid, "nan")).replace('"startedAt": ', '"startedAt": NaN, "x": '))
    put(s, f"{d.pid}.json", record(d.pid, "numstart", procStart=int(proc_start(d.pid) or 0)))  # not a string: not compared
    put(s, f"{e.pid}.json", record(e.pid, "ftmismatch", procStartFt="1"))  # procStartFt wins over procStart
    put(s, "999999999.json", "{not json")
    f = spawn()
    os.mkfifo(s / f"{f.pid}.json")  # a FIFO in a record's place: skipped by both, read (and waited on) by neither


def case_wrong_types(s: Path, spawn: Callable) -> None:
    a, b = spawn(), spawn()
    put(s, f"{a.pid}.json", record(a.pid, "typed", status=7, startedAt="soon", cwd=["x"], sessionId=""))
    put(s, f"{b.pid}.json", json.dumps([1, 2]))  # not an object: no kind, not listed


CASES = {f.__name__.removeprefix("case_"): f for f in (
    case_live, case_killed_session, case_zombie, case_reused_pid, case_two_records_one_name, case_waiting_and_shell,
    case_legacy_pid_file, case_no_procstart, case_kinds_and_parked, case_odd_files, case_wrong_types)}


def undecided_bg_job(s: Path, spawn: Callable) -> None:
    p = spawn()
    put(s, f"{p.pid}.json", record(p.pid, "job", kind="bg", jobId="j-1"))
    q = spawn()
    put(s, f"{q.pid}.json", record(q.pid, "alpha"))


def undecided_unverified_version(s: Path, spawn: Callable) -> None:
    p = spawn()
    put(s, f"{p.pid}.json", record(p.pid, "future", version="9.9.999"))


UNDECIDED = {"bg_job": undecided_bg_job, "unverified_version": undecided_unverified_version}


# -- what is compared -----------------------------------------------------------------------------------------


def rule_over(sessions: Path) -> RuleListing:
    files = [(n, *read_record_file(str(sessions / n))) for n in sorted(os.listdir(sessions))]
    return apply_rule(files, verified=lambda v: is_verified("claude-code", v))


def real_listing(exe: str, cfg: Path) -> list[dict]:
    env = {"HOME": str(cfg.parent), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CLAUDE_CONFIG_DIR": str(cfg),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    cp = subprocess.run([exe, "agents", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def provider(cfg: Path, exe: str, rule: bool) -> ClaudeProvider:
    env = {"HOME": str(cfg.parent), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CLAUDE_CONFIG_DIR": str(cfg),
           "RELAY_CLAUDE_BIN": exe, "RELAY_TMUX_SOCKET": f"relay-rule-none-{os.getpid()}"}
    return ClaudeProvider(env=env, panes=PaneRoster(env=env, ttl=0), listing_rule=rule)


def target_rows(targets) -> list[tuple]:
    """What an operator sees of each target (not the words naming which listing decided)."""
    return sorted((t.spec, t.pid, t.live, t.state, t.pane, t.transports, t.client_version, t.client_status,
                   t.detail.status_raw if not t.detail.unreadable else None) for t in targets)


def _copy(src: str, dst: str) -> None:
    if stat.S_ISFIFO(os.lstat(src).st_mode):
        os.mkfifo(dst)  # copied as what it is, never read
    else:
        shutil.copy2(src, dst)


def restore(sessions: Path, saved: Path) -> None:
    """The registry as the case wrote it (a real listing may sweep or delete files it rejects)."""
    shutil.rmtree(sessions)
    shutil.copytree(saved, sessions, symlinks=True, copy_function=_copy)


def build(tmp_path: Path, write: Callable, spawn: Callable) -> tuple[Path, Path, Path]:
    cfg = tmp_path / "claude"
    sessions = cfg / "sessions"
    sessions.mkdir(parents=True)
    write(sessions, spawn)
    saved = tmp_path / "saved-sessions"
    shutil.copytree(sessions, saved, symlinks=True, copy_function=_copy)
    return cfg, sessions, saved


# -- tests ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_rule_lists_what_claude_agents_json_lists(case, tmp_path, spawn, claude_exe):
    cfg, sessions, saved = build(tmp_path, CASES[case], spawn)
    rule = rule_over(sessions)
    assert rule.undecided == {}, rule.undecided
    with_rule = await provider(cfg, claude_exe, rule=True).discover()
    restore(sessions, saved)
    listed = real_listing(claude_exe, cfg)
    assert sorted(rule.rows) == sorted(listing_rows(listed)), (case, listed)  # a set of rows (ties in startedAt keep directory order)
    restore(sessions, saved)
    with_listing = await provider(cfg, claude_exe, rule=False).discover()
    assert target_rows(with_rule) == target_rows(with_listing)
    for t in with_rule:  # the rule decided: no listing ran, and the plan says what decided
        if t.live:
            assert t.identified_by.startswith("claude agents --json's rule over sessions/ (in-process) + ")


@pytest.mark.parametrize("case", sorted(UNDECIDED))
async def test_where_the_rule_is_undecided_the_real_listing_decides(case, tmp_path, spawn, claude_exe):
    cfg, sessions, saved = build(tmp_path, UNDECIDED[case], spawn)
    assert rule_over(sessions).undecided
    seen = tmp_path / "ran"
    wrapper = tmp_path / "claude-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho ran >> {seen}\nexec {claude_exe} "$@"\n')
    wrapper.chmod(0o755)
    prov = provider(cfg, str(wrapper), rule=True)
    with_rule = await prov.discover()
    assert seen.read_text() == "ran\n"  # the real listing ran, once
    assert "its rule is undecided on sessions/" in prov.notes[0]
    assert all(t.identified_by.startswith("claude agents --json + ") for t in with_rule if t.live)
    restore(sessions, saved)
    with_listing = await provider(cfg, claude_exe, rule=False).discover()
    assert target_rows(with_rule) == target_rows(with_listing)


def test_the_early_prefetch_reads_no_fifo(tmp_path, spawn):
    """The prefetch applies the rule before any relay module loads (agents/claude_code/listing.py):
    a FIFO named like a record is skipped by lstat and never opened for a blocking read."""
    from relay_repl.agents.claude_code.listing import rule_decides

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    p = spawn()
    put(sessions, f"{p.pid}.json", record(p.pid, "alpha"))
    os.mkfifo(sessions / "4242.json")
    assert read_record_file(str(sessions / "4242.json")) == (None, "not a regular file (Claude does not follow a symlink here)")
    assert rule_decides(str(sessions)) is True


async def test_a_decided_rule_runs_no_listing(tmp_path, spawn):
    cfg, sessions, _ = build(tmp_path, case_two_records_one_name, spawn)
    seen = tmp_path / "ran"
    exe = tmp_path / "claude-spy"
    exe.write_text(f"#!/bin/sh\necho ran >> {seen}\necho '[]'\n")
    exe.chmod(0o755)
    ts = await provider(cfg, str(exe), rule=True).discover()
    assert not seen.exists()
    assert sorted(t.name for t in ts if t.live) == ["alpha", "alpha"]


async def test_a_record_claude_would_not_list_is_stale_with_the_rules_reason(tmp_path, spawn):
    def write(s: Path, spawn: Callable) -> None:
        p, q, r = spawn(), spawn(), spawn()
        put(s, f"{p.pid}.json", record(p.pid, "ftmismatch", procStartFt="1"))
        put(s, f"{q.pid}.json", record(q.pid, "daemon", kind="daemon"))
        (s.parent / "linked.json").write_text(json.dumps(record(r.pid, "linked")))
        (s / f"{r.pid}.json").symlink_to(s.parent / "linked.json")  # relay reads it; Claude's lstat skips it

    cfg, _, _ = build(tmp_path, write, spawn)
    ts = {t.name: t for t in await provider(cfg, "/nonexistent", rule=True).discover()}
    assert not ts["ftmismatch"].live and "would not list it: not live by Claude's rule" in ts["ftmismatch"].stale_reason
    assert not ts["daemon"].live and "its kind is 'daemon'" in ts["daemon"].stale_reason
    assert not ts["linked"].live and "Claude skips sessions/" in ts["linked"].stale_reason
    assert "not a regular file" in ts["linked"].stale_reason


async def test_status_waiting_and_shell_keep_the_records_state(tmp_path, spawn):
    """`waiting` stays waiting with what it waits for; `shell` is idle (a peer message is delivered
    at once, CC §1.5) though the listing prints busy; a record with no status yet is unknown."""
    cfg, _, _ = build(tmp_path, case_waiting_and_shell, spawn)
    ts = {t.name: t for t in await provider(cfg, "/nonexistent", rule=True).discover()}
    assert (ts["held"].live, ts["held"].state, ts["held"].detail.waiting_for) == (True, "waiting", "permission prompt")
    assert (ts["shelled"].live, ts["shelled"].state, ts["shelled"].detail.status_raw) == (True, "idle", "shell")
    assert (ts["starting"].live, ts["starting"].state) == (True, "unknown")


async def test_a_legacy_pid_file_is_skipped_with_its_reason(tmp_path, spawn):
    cfg, sessions, _ = build(tmp_path, case_legacy_pid_file, spawn)
    legacy = next(sessions.glob("pid-*.json"))
    ts = await provider(cfg, "/nonexistent", rule=True).discover()
    (skipped,) = [t for t in ts if t.name == legacy.stem]
    assert not skipped.live and skipped.transports == () and skipped.pid is None
    assert "legacy record" in skipped.stale_reason and "never listed as live" in skipped.stale_reason
    assert [t.name for t in ts if t.live] == ["alpha"]  # the legacy file's name ("legacy") is never a target


async def test_doctor_keeps_the_real_listing_as_the_rules_cross_check(tmp_path, spawn, claude_exe):
    from relay_repl.agents.claude_code.doctor import check_claude

    cfg, sessions, _ = build(tmp_path, case_two_records_one_name, spawn)
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CLAUDE_CONFIG_DIR": str(cfg),
           "RELAY_CLAUDE_BIN": claude_exe}
    row = (await check_claude(env))[-1]
    assert row.ok and row.detail == f"ran `{claude_exe} agents --json`: 2 live session(s); relay's in-process rule lists the same ones"
    liar = tmp_path / "claude-liar"  # a listing that disagrees with the rule: the row says so and fails
    liar.write_text("#!/bin/sh\necho '[{\"pid\": 4242, \"name\": \"other\"}]'\n")
    liar.chmod(0o755)
    row = (await check_claude({**env, "RELAY_CLAUDE_BIN": str(liar)}))[-1]
    assert not row.ok and "lists pids" in row.detail and "[4242]" in row.detail
