"""Claude discovery over real registry files, real processes, real sockets and a real tmux server.

The listing CLI is either the real `claude` binary (when installed) or a small shell
script standing in for it; the provider under test is never mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import libtmux
import pytest

from relay_repl.agents import PaneRoster
from relay_repl.agents.claude_code import ClaudeProvider
from relay_repl.agents.claude_code.provider import _java_hash, munge_cwd, transcript_path
from relay_repl.system.proc import proc_start
from relay_repl.core.errors import AmbiguousTarget, StaleTarget
from relay_repl.store.ledger import Ledger
from relay_repl.session.session import Session

pytestmark = pytest.mark.anyio


# -- helpers -----------------------------------------------------------------------------------


@pytest.fixture
def procs():
    """Start `sleep` processes; all are killed and reaped at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> int:
        p = subprocess.Popen(["sleep", "600"])
        started.append(p)
        return p.pid

    yield start
    for p in started:
        p.kill()
        p.wait()


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.fixture
def cfg(tmp_path):
    d = tmp_path / "claude-cfg"
    (d / "sessions").mkdir(parents=True)
    return d


@pytest.fixture
def sockets(tmp_path):
    """Bind real Unix sockets (as a session's inbox would be); closed at the end."""
    opened: list[socket.socket] = []
    sock_dir = tmp_path / "run" / "cc-socks"
    sock_dir.mkdir(parents=True)

    def bind(name: str) -> str:
        path = str(sock_dir / name)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen()
        opened.append(s)
        return path

    yield bind
    for s in opened:
        s.close()


def write_record(cfg: Path, pid: int, *, start: str | None = "auto", name: str = "alpha", status: str | None = "idle",
                 sock: str | None = None, **extra) -> Path:
    rec = {"pid": pid, "sessionId": f"sess-{pid}", "cwd": "/home/user/proj", "version": "2.1.328",
           "kind": "interactive", "entrypoint": "cli", "name": name, "nameSource": "user", **extra}
    if start == "auto":
        start = proc_start(pid)
    if start is not None:
        rec["procStart"] = start
    if status is not None:
        rec["status"] = status
    if sock is not None:
        rec["messagingSocketPath"] = sock
    path = cfg / "sessions" / f"{pid}.json"
    path.write_text(json.dumps(rec))
    return path


def fake_claude(tmp_path: Path, listing: list[dict] | None, exit_code: int = 0) -> tuple[str, Path]:
    """A stand-in for `claude agents --json` that prints `listing` and records its environment."""
    seen = tmp_path / "fake-claude-seen"
    out = tmp_path / "fake-claude-listing.json"
    out.write_text(json.dumps(listing) if listing is not None else "not json")
    exe = tmp_path / "fake-claude"
    exe.write_text(
        "#!/bin/sh\n"
        f'echo "$@|$CLAUDE_CONFIG_DIR" >> {seen}\n'
        f'echo "$CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC|$DISABLE_AUTOUPDATER" >> {seen}.env\n'
        f'[ "$1 $2" = "agents --json" ] || exit 2\n'
        f"cat {out}\n"
        f"exit {exit_code}\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe), seen


def real_claude() -> str | None:
    """The real `claude` binary: $RELAY_CLAUDE_BIN, the lab client cache, or PATH."""
    cands = [os.environ.get("RELAY_CLAUDE_BIN")]
    if os.environ.get("RELAY_LAB_CLIENTS"):
        cands.append(os.path.join(os.environ["RELAY_LAB_CLIENTS"], "node_modules", ".bin", "claude"))
    # the operator's default client cache (conftest points RELAY_HOME at a tmp dir)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    cands.append(os.path.join(xdg, "relay-repl", "clients", "node_modules", ".bin", "claude"))
    cands.append(shutil.which("claude"))
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


def provider(cfg: Path, tmp_path: Path, *, claude_bin: str | None = None, tmux: libtmux.Server | None = None,
             extra: dict[str, str] | None = None, rule: bool = True) -> ClaudeProvider:
    """The provider on `cfg`; `rule=False`: `claude agents --json` decides who is listed (its mechanics
    under test), not Claude's own rule applied in-process (listing_rule.py)."""
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "CLAUDE_CONFIG_DIR": str(cfg), "RELAY_CLAUDE_BIN": claude_bin or str(tmp_path / "no-such-claude"),
           "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR", "/tmp")}
    if tmux is not None:
        env["RELAY_TMUX_SOCKET"] = tmux.socket_name or ""
    env.update(extra or {})
    return ClaudeProvider(env=env, panes=PaneRoster(env=env, ttl=0), listing_rule=rule)


def by_pid(targets):
    return {t.pid: t for t in targets}


# -- liveness and stale records -------------------------------------------------------------------


async def test_live_record_is_live_with_socket_transports(cfg, tmp_path, procs, sockets):
    pid = procs()
    sock = sockets(f"{pid}.sock")
    write_record(cfg, pid, sock=sock)
    (t,) = await provider(cfg, tmp_path).discover()
    assert t.live and t.kind == "claude-code" and t.name == "alpha" and t.pid == pid
    assert t.address == sock and t.state == "idle"
    assert t.transports == ("claude-code-socket", "claude-code-message")
    assert t.pane is None  # no pane runs it: tmux is not offered
    assert t.proc_start == proc_start(pid) and t.socket == sock
    assert t.identified_by.startswith("claude agents --json's rule over sessions/ (in-process) + ")  # no binary needed
    assert f"procStart {proc_start(pid)} matches" in t.identified_by
    (t,) = await provider(cfg, tmp_path, rule=False).discover()  # the real listing, and no claude binary
    assert t.live and "registry files only (claude binary not found" in t.identified_by


async def test_dead_pid_and_reused_pid_are_stale_and_never_offered(cfg, tmp_path, procs, sockets):
    gone = dead_pid()
    write_record(cfg, gone, start="12345", status="busy", sock=sockets("dead.sock"))  # kill -9 leaves busy behind
    reused = procs()
    write_record(cfg, reused, start="1", name="beta", sock=sockets("reused.sock"))
    ts = by_pid(await provider(cfg, tmp_path).discover())
    assert not ts[gone].live and ts[gone].transports == () and ts[gone].state == "unknown"
    assert ts[gone].stale_reason == f"pid {gone} is not running"
    assert not ts[reused].live and ts[reused].transports == ()
    assert "was reused: procStart 1 recorded" in ts[reused].stale_reason
    assert ts[reused].identified_by.startswith(f"sessions/{reused}.json: stale")


async def test_record_without_procstart_is_not_trusted(cfg, tmp_path, procs):
    pid = procs()
    write_record(cfg, pid, start=None)
    (t,) = await provider(cfg, tmp_path).discover()
    assert not t.live and "no procStart" in t.stale_reason


async def test_unreadable_records_become_entries_not_crashes(cfg, tmp_path, procs):
    good = procs()
    write_record(cfg, good)
    (cfg / "sessions" / "111.json").write_text("{not json")
    (cfg / "sessions" / "222.json").mkdir()  # reading it fails with an OSError
    (cfg / "sessions" / "333.json").write_text(json.dumps({"pid": good, "procStart": "1"}))  # named for another pid
    (cfg / "sessions" / "notes.json").write_text("{}")  # not a pid record: ignored
    (cfg / "sessions" / f"{good}.abc.key").write_text("{}")
    ts = await provider(cfg, tmp_path).discover()
    live = [t for t in ts if t.live]
    assert [t.pid for t in live] == [good]
    broken = {t.name: t for t in ts if t.detail.unreadable}
    assert set(broken) == {"111", "222", "333"}
    assert "not a valid record" in broken["111"].stale_reason
    assert "unreadable" in broken["222"].stale_reason
    assert "names pid" in broken["333"].stale_reason
    assert all(not t.live and "\n" not in t.identified_by for t in broken.values())


async def test_missing_config_dir_gives_nothing_and_runs_nothing(tmp_path):
    exe, seen = fake_claude(tmp_path, [])
    prov = provider(tmp_path / "absent", tmp_path, claude_bin=exe)
    assert await prov.discover() == []
    assert not seen.exists()


# -- the listing ---------------------------------------------------------------------------------------


async def test_listing_is_authoritative_and_gets_the_config_dir(cfg, tmp_path, procs):
    listed, unlisted = procs(), procs()
    write_record(cfg, listed, name="alpha")
    write_record(cfg, unlisted, name="beta")
    exe, seen = fake_claude(tmp_path, [{"pid": listed, "name": "alpha", "status": "idle", "cwd": "/x"}])
    ts = by_pid(await provider(cfg, tmp_path, claude_bin=exe, rule=False).discover())
    assert seen.read_text().strip() == f"agents --json|{cfg}"
    assert ts[listed].live and ts[listed].identified_by.startswith(f"claude agents --json + sessions/{listed}.json")
    assert not ts[unlisted].live
    assert "does not list it" in ts[unlisted].stale_reason


async def test_the_listing_runs_without_nonessential_traffic_unless_the_operator_set_it(cfg, tmp_path, procs):
    """Plain `claude agents --json` looks a host up over DNS first; relay's read-only listing
    asks it not to (and waits less), but an operator's own setting of the variables wins."""
    write_record(cfg, procs(), name="alpha")
    exe, seen = fake_claude(tmp_path, [])
    await provider(cfg, tmp_path, claude_bin=exe, rule=False).discover()
    assert Path(f"{seen}.env").read_text() == "1|1\n"
    exe, seen = fake_claude(tmp_path, [])
    Path(f"{seen}.env").unlink()
    await provider(cfg, tmp_path, claude_bin=exe, extra={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "0"}, rule=False).discover()
    assert Path(f"{seen}.env").read_text() == "0|1\n"


async def test_listed_pid_whose_record_appears_late_is_read(cfg, tmp_path, procs):
    pid = procs()
    exe, _ = fake_claude(tmp_path, [{"pid": pid, "name": "late"}])
    prov = provider(cfg, tmp_path, claude_bin=exe, rule=False)
    # The record exists only by the time the listing runs (written by the listing itself here).
    write_record(cfg, pid, name="late")
    (t,) = await prov.discover()
    assert t.live and t.name == "late"


@pytest.mark.parametrize("listing,code,why", [(None, 0, "unparseable"), ([], 1, "exited 1")])
async def test_listing_failure_falls_back_to_files_and_says_so(cfg, tmp_path, procs, listing, code, why):
    pid = procs()
    write_record(cfg, pid)
    exe, _ = fake_claude(tmp_path, listing, exit_code=code)
    (t,) = await provider(cfg, tmp_path, claude_bin=exe, rule=False).discover()
    assert t.live
    assert t.identified_by.startswith("registry files only (") and why in t.identified_by


async def test_real_claude_agents_json_agrees_with_the_kernel_rule(cfg, tmp_path, procs):
    exe = real_claude()
    if exe is None:
        pytest.skip("claude binary not installed (set RELAY_CLAUDE_BIN or run `relay lab install`)")
    live, reused = procs(), procs()
    write_record(cfg, live, name="listed-live")
    write_record(cfg, reused, name="reused", start="1")
    write_record(cfg, dead_pid(), name="dead", start="7")
    ts = await provider(cfg, tmp_path, claude_bin=exe, rule=False).discover()
    assert [(t.name, t.live) for t in sorted(ts, key=lambda t: t.name)] == [
        ("dead", False), ("listed-live", True), ("reused", False)]
    (t,) = [t for t in ts if t.live]
    assert t.identified_by.startswith("claude agents --json + ")


# -- state, names, panes, transcript ---------------------------------------------------------------------


async def test_status_mapping(cfg, tmp_path, procs):
    pids = {s: procs() for s in ("idle", "busy", "waiting", "shell", None)}
    for status, pid in pids.items():
        extra = {"waitingFor": "permission prompt"} if status == "waiting" else {}
        write_record(cfg, pid, name=f"s-{status}", status=status, **extra)
    ts = by_pid(await provider(cfg, tmp_path).discover())
    got = {s: (ts[p].state, ts[p].detail.status_raw) for s, p in pids.items()}
    assert got == {"idle": ("idle", "idle"), "busy": ("busy", "busy"), "waiting": ("waiting", "waiting"),
                   "shell": ("idle", "shell"), None: ("unknown", None)}
    assert ts[pids["waiting"]].detail.waiting_for == "permission prompt"


async def test_two_live_sessions_with_one_name_are_both_live_and_the_session_refuses(cfg, tmp_path, procs, sockets):
    a, b = procs(), procs()
    write_record(cfg, a, name="alpha", sock=sockets("a.sock"))
    write_record(cfg, b, name="alpha", sock=sockets("b.sock"), sessionId=f"sess-{a}")  # a resumed copy
    gone = dead_pid()
    write_record(cfg, gone, name="gone", start="5")
    prov = provider(cfg, tmp_path)
    ts = await prov.discover()
    assert sorted(t.pid for t in ts if t.live and t.name == "alpha") == sorted([a, b])
    session = Session(ledger=Ledger(tmp_path / "l.sqlite"), providers=[prov])
    with pytest.raises(AmbiguousTarget, match="claude:alpha is ambiguous, 2 live sessions"):
        await session.target("claude:alpha")
    with pytest.raises(StaleTarget):
        await session.target("claude:gone")
    assert (await session.target(f"claude:{ts[0].address}")).live  # by socket path: unique


async def test_socket_transports_need_a_real_socket_we_own(cfg, tmp_path, procs):
    no_sock, file_sock, missing = procs(), procs(), procs()
    write_record(cfg, no_sock, name="a")
    plain = tmp_path / "plain.sock"
    plain.write_text("")
    write_record(cfg, file_sock, name="b", sock=str(plain))
    write_record(cfg, missing, name="c", sock=str(tmp_path / "gone.sock"))
    ts = by_pid(await provider(cfg, tmp_path).discover())
    assert all(ts[p].live and ts[p].transports == () for p in (no_sock, file_sock, missing))
    assert ts[no_sock].address == "" and "no messagingSocketPath" in ts[no_sock].detail.socket_note
    assert "is not a socket" in ts[file_sock].detail.socket_note
    assert "does not exist" in ts[missing].detail.socket_note


async def test_pane_is_the_one_running_the_pid_never_the_record_tmux_field(cfg, tmp_path, tmux_server, procs, sockets):
    sess = tmux_server.new_session(session_name="w", window_command="exec sleep 600", attach=False)
    pane = sess.active_window.active_pane
    pane_pid = int(pane.pane_pid)
    # the process in the pane, and a "child claude" elsewhere that inherited the pane's tmux field
    write_record(cfg, pane_pid, name="parent", sock=sockets("p.sock"), tmux=f"w:@0.{pane.pane_id}")
    child = procs()
    write_record(cfg, child, name="child", sock=sockets("c.sock"), tmux=f"w:@0.{pane.pane_id}")
    ts = by_pid(await provider(cfg, tmp_path, tmux=tmux_server).discover())
    assert ts[pane_pid].pane == pane.pane_id
    assert ts[pane_pid].transports == ("claude-code-socket", "claude-code-message", "tmux")
    assert ts[pane_pid].tmux_socket.endswith(tmux_server.socket_name)
    assert f"pane {pane.pane_id} has pane_pid {pane_pid}" in ts[pane_pid].identified_by
    assert ts[child].pane is None and "tmux" not in ts[child].transports
    assert ts[child].detail.record_tmux == f"w:@0.{pane.pane_id}"


def test_java_hash_matches_java():
    # Known values of java.lang.String.hashCode()
    assert _java_hash("") == 0
    assert _java_hash("hello") == 99162322
    assert _java_hash("Hello World") == -862545276
    assert _java_hash("\U0001F600") == 31 * 0xD83D + 0xDE00  # surrogate pair: two UTF-16 units


def test_transcript_path_munging(tmp_path):
    assert munge_cwd("/home/user/proj") == "-home-user-proj"
    assert munge_cwd("/tmp/a b/ü.x") == "-tmp-a-b---x"
    assert munge_cwd("/e/\U0001F600") == "-e---"  # one astral char = two UTF-16 units
    long = "/" + "d" * 250
    m = munge_cwd(long)
    assert m.startswith("-" + "d" * 199 + "-") and len(m) > 201
    h = abs(_java_hash(long))
    digits = ""
    while h:
        h, r = divmod(h, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
    assert m == ("-" + "d" * 250)[:200] + "-" + digits
    assert transcript_path(tmp_path, "/home/user/proj", "abc") == tmp_path / "projects" / "-home-user-proj" / "abc.jsonl"
    assert transcript_path(tmp_path, None, "abc") is None


async def test_detail_carries_the_transcript_and_record_facts(cfg, tmp_path, procs):
    pid = procs()
    write_record(cfg, pid, cwd="/w/p", sessionId="s-1")
    tp = cfg / "projects" / "-w-p" / "s-1.jsonl"
    tp.parent.mkdir(parents=True)
    tp.write_text("")
    (t,) = await provider(cfg, tmp_path).discover()
    d = t.detail
    assert (d.session_id, d.cwd, t.evidence_file, d.transcript_exists) == ("s-1", "/w/p", str(tp), True)
    assert (d.name_source, t.client_version, t.client_status) == ("user", "2.1.328", "pinned")


async def test_own_address_inside_a_claude_session(cfg, tmp_path, procs, sockets):
    pid = procs()
    sock = sockets("me.sock")
    write_record(cfg, pid, name="me-session", sock=sock)
    prov = provider(cfg, tmp_path, extra={"CLAUDE_PID": str(pid), "CLAUDE_CODE_MESSAGING_SOCKET": sock})
    me = prov.own_address()
    assert me is not None and me.address == "me-session" and me.inbox == sock
    assert provider(cfg, tmp_path).own_address() is None


async def test_fifty_records_refresh_well_under_a_second(cfg, tmp_path, procs, sockets):
    pids = [procs() for _ in range(50)]
    for i, pid in enumerate(pids):
        write_record(cfg, pid, name=f"s{i}", sock=sockets(f"{i}.sock"))
    for i in range(50):
        write_record(cfg, dead_pid(), name=f"dead{i}", start="3")
    prov = provider(cfg, tmp_path)
    await prov.discover()  # warm
    t0 = time.perf_counter()
    ts = await prov.discover()
    elapsed = time.perf_counter() - t0
    assert sum(t.live for t in ts) == 50 and len(ts) == 100
    assert elapsed < 0.5, f"refresh of 100 records took {elapsed:.3f}s"
    print(f"claude refresh, 50 live + 50 stale records, no listing CLI: {elapsed * 1000:.1f} ms", file=sys.stderr)


# -- panes: pure parsing and server selection ---------------------------------------------------------


def test_tmux_servers_from_the_environment():
    from relay_repl.system.panes import tmux_servers

    env = {"RELAY_TMUX_SOCKET": "lab", "TMUX": "/tmp/tmux-0/default,123,0", "TMUX_TMPDIR": "/tmp"}
    got = [(s.socket_path, s.label) for s in tmux_servers(env)]
    uid = os.getuid()
    assert got[0] == (f"/tmp/tmux-{uid}/lab", "RELAY_TMUX_SOCKET=lab")
    assert got[1] == ("/tmp/tmux-0/default", "$TMUX")
    # the default server is the same socket as $TMUX's when uid is 0: listed once
    assert len(got) == (2 if uid == 0 else 3)
    assert [s.label for s in tmux_servers({"TMUX_TMPDIR": "/x"})] == ["default"]


def test_parse_panes_and_split_captures():
    from relay_repl.system.panes import SEP, TmuxServer, parse_panes, split_captures

    srv = TmuxServer("/s", "t")
    line = SEP.join(["%3", "42", "@1", "1", "copy-mode", "0", "1", "2", "40", "node", f"odd{SEP}name"])
    (p,) = parse_panes(srv, line + "\nbroken line\n")
    assert (p.pane_id, p.pane_pid, p.in_mode, p.mode, p.alternate_on, p.cursor_x) == ("%3", 42, True, "copy-mode", True, 2)
    assert (p.current_command, p.session_name) == ("node", f"odd{SEP}name")
    text = "M %1\nline a\n\nM %2\nline b\n"
    assert split_captures(text, "M") == {"%1": "line a", "%2": "line b"}


async def test_capture_reads_several_panes_in_one_call(tmux_server):
    from relay_repl.system.panes import PaneRoster

    for n in ("a", "b"):
        tmux_server.new_session(session_name=n, attach=False, window_command=f"printf 'hello {n} ü\\n'; sleep 600")
    env = {"PATH": os.environ.get("PATH", ""), "RELAY_TMUX_SOCKET": tmux_server.socket_name or "",
           "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR", "/tmp")}
    roster = PaneRoster(env=env, ttl=0)
    panes = [p for p in await roster.panes() if p.session_name in ("a", "b")]
    assert len(panes) == 2
    for _ in range(50):
        shots = await roster.capture(panes)
        if all(f"hello {p.session_name} ü" in shots.get(p.key, "") for p in panes):
            break
        await anyio.sleep(0.05)
    else:
        raise AssertionError(shots)
