"""`relay lab ...`: run the REAL pinned Claude Code and Codex CLIs offline.

The lab is N Claude Code and M Codex interactive sessions in a private tmux server,
talking to stub model servers (relay_repl.lab.stubs) on 127.0.0.1, all under one
directory (`paths.lab_dir()`; layout in relay_repl.lab.layout). Where the machine allows
it, everything runs in a private network namespace holding only `lo`, so nothing can
leave loopback; unix sockets (tmux, stub control, agent messaging) still cross.

API (all synchronous and blocking; from async code use `anyio.to_thread.run_sync`):

    install(progress=print) -> dict            pinned clients into the client cache
    up(claude=1, codex=1, progress=print) -> LabState
    status() -> LabState | None                refreshed liveness, pids, panes, transcripts
    down(progress=print) -> bool               False (and "no lab running") if nothing to do
    env() -> dict[str, str]                    variables that point tools at the lab
    attach(name)                               exec tmux attach (does not return)
    ensure_lab(claude=1, codex=1) -> LabState  the running lab, restarting only dead sessions; else up

Every failure is a LabError with one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.request import pathname2url

import relay_repl.store.paths as paths
from relay_repl.core.errors import LabError, TmuxError
from relay_repl.system.tmux import TmuxResult
from relay_repl.system.tmux import run as run_tmux

import relay_repl.lab.procs as procs
from relay_repl.lab.install import VERIFIED_VERSIONS, any_clients, clients_root, install
from relay_repl.lab.install import bin_dir as _cache_bin_dir
from relay_repl.agents.claude_code import transcript_path
from relay_repl.agents.codex import is_codex_tui, read_session_index

from relay_repl.lab.layout import (
    CLAUDE,
    CODEX,
    PANE_HEIGHT,
    PANE_WIDTH,
    Layout,
    McpCommand,
    codex_provider_id,
    session_names,
    tmux_socket_path,
)
from relay_repl.lab.state import LabSession, LabState, StubInfo, StubSession, load, save

__all__ = ["install", "up", "status", "down", "env", "attach", "ensure_lab", "layout"]

Progress = Callable[[str], object]

STUB_READY_TIMEOUT = 20.0
UP_TIMEOUT = float(os.environ.get("RELAY_LAB_UP_TIMEOUT", "240"))
CODEX_BUSY_MARK = "esc to interrupt"
# Run by path (it imports nothing of the package), so no PYTHONPATH leaks into the panes.
_NETNS = str(Path(__file__).with_name("netns.py"))


def layout() -> Layout:
    return Layout.at(paths.lab_dir())


_lock_depth = 0
_lock_guard = threading.RLock()


@contextlib.contextmanager
def _lab_lock(lay: Layout) -> Iterator[None]:
    """Serialise up/down/ensure_lab on one lab across processes (flock beside the lab dir)."""
    global _lock_depth
    with _lock_guard:
        if _lock_depth:
            _lock_depth += 1
            try:
                yield
            finally:
                _lock_depth -= 1
            return
        lock_path = lay.root.with_name(lay.root.name + ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _lock_depth = 1
            try:
                yield
            finally:
                _lock_depth = 0
        finally:
            os.close(fd)


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _extra_path() -> list[str]:
    """Directories the clients need besides their own bin dir (node for codex.js, git),
    and relay's own, so a lab agent can answer with `relay reply`."""
    out = [os.path.dirname(sys.executable)]
    for tool in ("node", "git", "tmux"):
        found = shutil.which(tool)
        if found:
            out.append(os.path.dirname(found))
    return out


def _lab_env(lay: Layout) -> dict[str, str]:
    env = lay.base_env(bin_dir(), _extra_path())
    env["RELAY_HOME"] = str(paths.state_dir())  # `relay reply` from a lab agent finds the operator's ledger and inbox
    return env


# ---- tmux ---------------------------------------------------------------------------------


def _tmux(lay: Layout, *args: str, env: dict[str, str] | None = None, check: bool = True,
          prefix: list[str] | None = None, timeout: float = 15.0) -> TmuxResult:
    """A tmux command on the lab's private server, through the one runner (`system.tmux`).

    The client's PATH becomes the new pane's PATH (tmux 3.3), so the tmux client always
    runs with the lab environment; `-f /dev/null`: nothing of the operator's tmux config."""
    try:
        res = run_tmux(("-L", lay.tmux_socket), *args, env=env or _lab_env(lay), timeout=timeout,
                       config="/dev/null", prefix=prefix or ())
    except TmuxError as exc:
        raise LabError(f"tmux {args[0]} failed: {exc}") from exc
    if check and not res.ok:
        raise LabError(f"tmux {' '.join(args[:1])} failed: {res.error}")
    return res


def _tmux_alive(lay: Layout) -> bool:
    if not tmux_socket_path(lay.tmux_socket).exists():
        return False
    return _tmux(lay, "list-sessions", check=False).returncode == 0


def _panes(lay: Layout) -> dict[str, dict[str, str]]:
    """tmux session name -> {pane_id, pane_pid, dead}."""
    fmt = "#{session_name}\t#{pane_id}\t#{pane_pid}\t#{pane_dead}"
    proc = _tmux(lay, "list-panes", "-a", "-F", fmt, check=False)
    out: dict[str, dict[str, str]] = {}
    if proc.returncode != 0:
        return out
    for line in proc.stdout:
        parts = line.split("\t")
        if len(parts) == 4:
            out.setdefault(parts[0], {"pane_id": parts[1], "pane_pid": parts[2], "dead": parts[3]})
    return out


def _capture(lay: Layout, target: str) -> str:
    proc = _tmux(lay, "capture-pane", "-p", "-t", target, check=False)
    return proc.text if proc.ok else ""


def _tail(text: str, n: int = 6) -> str:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


# ---- stubs --------------------------------------------------------------------------------


def _stub_env(lay: Layout) -> dict[str, str]:
    env = _lab_env(lay)
    env["PYTHONPATH"] = _package_root()
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _start_stub(lay: Layout, netns: bool, progress: Progress) -> StubInfo:
    log = lay.logs / "stubs.log"
    py = sys.executable
    cmd = [py, "-m", "relay_repl.lab.stubs", "--control", str(lay.stub_control),
           "--ready-file", str(lay.stub_ready)]
    if netns:
        cmd = [py, _NETNS, "--unshare", "--", *cmd]
    with open(log, "ab") as fh:
        try:
            proc = subprocess.Popen(cmd, env=_stub_env(lay), cwd=lay.root, stdin=subprocess.DEVNULL,
                                    stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            raise LabError(f"cannot start the stub server: {exc}") from exc
    deadline = time.monotonic() + STUB_READY_TIMEOUT
    while time.monotonic() < deadline:
        if lay.stub_ready.exists():
            try:
                ready = json.loads(lay.stub_ready.read_text())
                break
            except (OSError, ValueError):
                pass
        if proc.poll() is not None:
            raise LabError(f"stub server exited with {proc.returncode}: {_tail(_read(log), 2)} (log {log})")
        time.sleep(0.05)
    else:
        proc.kill()
        raise LabError(f"stub server not ready after {STUB_READY_TIMEOUT:g}s (log {log})")
    # Popen is not waited on: the stub outlives this process and `down` ends it.
    proc.returncode = 0  # silence ResourceWarning on interpreter exit
    pid = int(ready.get("pid") or proc.pid)
    progress(f"stub server up (pid {pid}{', private netns' if netns else ''})")
    return StubInfo(pid=pid, control=str(lay.stub_control), ready_file=str(lay.stub_ready),
                    log=str(log), alive=True)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _stub_add_session(control: str, name: str, api: str) -> StubSession:
    try:
        from relay_repl.lab.stubs.client import SyncStubClient

        info = SyncStubClient(control).add_session(name, api)
        return StubSession.model_validate(info.model_dump())
    except ImportError:
        pass
    import asyncio

    import aiohttp

    async def go() -> dict:
        async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=control)) as http:
            async with http.post("http://stub/sessions", json={"name": name, "api": api}) as resp:
                if resp.status >= 400:
                    raise LabError(f"stub refused session {name}: HTTP {resp.status} {await resp.text()}")
                return await resp.json()

    try:
        return StubSession.model_validate(asyncio.run(go()))
    except (aiohttp.ClientError, OSError) as exc:
        raise LabError(f"stub control socket {control} not reachable: {exc}") from exc


# ---- netns --------------------------------------------------------------------------------


def _netns_wanted() -> bool:
    return os.environ.get("RELAY_LAB_NETNS", "auto").lower() not in ("0", "no", "off", "false")


def _netns_works() -> bool:
    proc = subprocess.run([sys.executable, _NETNS, "--probe"], capture_output=True, timeout=20)
    return proc.returncode == 0


# ---- client setup -------------------------------------------------------------------------


def _prepare_dirs(lay: Layout, names: list[tuple[str, str]]) -> None:
    lay.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(lay.root, 0o700)
    for d in lay.runtime_dirs:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    git = shutil.which("git")
    for name, _kind in names:
        wd = lay.workdir(name)
        wd.mkdir(parents=True, exist_ok=True, mode=0o700)
        if git and not (wd / ".git").exists():
            subprocess.run([git, "init", "-q", str(wd)], env=_lab_env(lay), capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=30)


def _mcp_command(lay: Layout) -> McpCommand:
    """`relay mcp` from this very installation, pointed at the operator's state (RELAY_HOME)."""
    exe = Path(sys.executable).parent / "relay"
    args: tuple[str, ...]
    if exe.exists():
        command, args = str(exe), ("mcp",)
    else:  # a source checkout run without the console script
        command, args = sys.executable, ("-m", "relay_repl", "mcp")
    env = _lab_env(lay)
    # the client registries too: the server identifies the session that called it (relay_requests
    # lists that session's requests only; a relay_reply claims the session proven to make it)
    keep = ("RELAY_HOME", "PATH", "CODEX_HOME", "CLAUDE_CONFIG_DIR")
    return McpCommand(command=command, args=args, env=tuple((k, env[k]) for k in keep if env.get(k)))


def _write_configs(lay: Layout, names: list[tuple[str, str]], stub: StubInfo) -> None:
    claude_cwds = [str(lay.workdir(n)) for n, k in names if k == CLAUDE]
    lay.claude_mcp_config_path.write_text(json.dumps(lay.claude_mcp_config(_mcp_command(lay)), indent=1))
    cfg = json.dumps(lay.claude_global_config(claude_cwds), indent=1)
    (lay.claude_config / ".claude.json").write_text(cfg)
    (lay.home / ".claude.json").write_text(cfg)
    codex = {n: stub.sessions[n].base_url for n, k in names if k == CODEX}
    if codex:
        workdirs = [str(lay.workdir(n)) for n in codex]
        path = lay.codex_home / "config.toml"
        sandbox = os.environ.get("RELAY_LAB_CODEX_SANDBOX") or "danger-full-access"
        path.write_text(lay.codex_config(codex, workdirs, sandbox=sandbox, shell_path=_lab_env(lay)["PATH"],
                                         mcp=_mcp_command(lay)))
        os.chmod(path, 0o600)


def _restore_codex_packages(lay: Layout, progress: Progress) -> None:
    """Move the cached daemon package copy back into CODEX_HOME (a rename: instant)."""
    cache, dest = lay.codex_packages_cache, lay.codex_packages
    if not cache.exists() or dest.exists():
        return
    current = cache / "app-server-daemon" / "current"
    try:
        target = os.readlink(current)
    except OSError:
        target = ""
    want = f"{lay.codex_packages}/app-server-daemon/releases/{VERIFIED_VERSIONS[CODEX]}-"
    if not target.startswith(want):
        shutil.rmtree(cache, ignore_errors=True)  # another version or another lab path
        return
    os.rename(cache, dest)
    progress("codex daemon packages restored from cache")


def _save_codex_packages(lay: Layout) -> None:
    src, cache = lay.codex_packages, lay.codex_packages_cache
    if not (src / "app-server-daemon" / "current").is_symlink():
        return
    if cache.exists():
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.rename(src, cache)
    except OSError:
        pass


# ---- session readiness ------------------------------------------------------------------


def _claude_record(lay: Layout, pid: int) -> dict | None:
    try:
        return json.loads((lay.claude_config / "sessions" / f"{pid}.json").read_text())
    except (OSError, ValueError):
        return None


def _codex_screen(text: str) -> str:
    """'idle' | 'busy' | 'starting' from a capture of a Codex TUI."""
    lines = text.splitlines()
    if any(CODEX_BUSY_MARK in ln for ln in lines) or any("Reconnecting" in ln for ln in lines):
        return "busy"
    if any(ln.startswith("› ") or ln == "›" for ln in lines):
        return "idle"
    return "starting"


def _codex_composer(text: str) -> str | None:
    """Text of the bottom-most `› ` line (the composer), or None."""
    for ln in reversed(text.splitlines()):
        if ln.startswith("› "):
            return ln[2:].rstrip()
    return None


def codex_thread_names(lay: Layout) -> dict[str, str]:
    """thread id -> current thread name, read by the Codex agent's own reader of session_index.jsonl."""
    rows = read_session_index(lay.codex_home / "session_index.jsonl")
    return {tid: str(r["thread_name"]) for tid, r in rows.items() if r.get("thread_name") is not None}


def _codex_locks(lay: Layout) -> set[str]:
    d = lay.codex_home / "thread-writer-locks"
    try:
        return {p.name[:-5] for p in d.iterdir() if p.name.endswith(".lock") and not p.name.startswith(".")}
    except OSError:
        return set()


def _codex_daemon_pid(lay: Layout) -> int | None:
    try:
        pid = int(json.loads((lay.codex_home / "app-server-daemon" / "daemon.pid").read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if procs.is_alive(pid) else None


def _codex_tui_pid(pane_pid: int) -> int | None:
    """The native codex TUI: the pane runs the npm node wrapper, which spawns it (the Codex
    agent's rule for which process is a TUI, `is_codex_tui`)."""
    if procs.exe_name(pane_pid) == "codex":
        return pane_pid
    for child in procs.children(pane_pid):
        if procs.exe_name(child) == "codex" or is_codex_tui(procs.cmdline(child)[:1]):
            return child
    return None


def _codex_rollout(lay: Layout, thread_id: str) -> str | None:
    db = lay.codex_home / "state_5.sqlite"
    if db.exists():
        try:
            con = sqlite3.connect(f"file:{pathname2url(str(db))}?mode=ro", uri=True, timeout=2)
            try:
                row = con.execute("SELECT rollout_path FROM threads WHERE id = ?", (thread_id,)).fetchone()
            finally:
                con.close()
            if row and row[0]:
                return str(row[0])
        except sqlite3.Error:
            pass
    hits = sorted((lay.codex_home / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return str(hits[-1]) if hits else None


def _type_line(lay: Layout, target: str, text: str) -> None:
    """Type `text` literally, then Enter in a separate call (Codex drops a same-call Enter)."""
    _tmux(lay, "send-keys", "-t", target, "-l", text)


def _rename_codex(lay: Layout, target: str, name: str, deadline: float, progress: Progress,
                  exclude: frozenset[str] | set[str] = frozenset()) -> str:
    """Type `/rename <name>` into a fresh idle Codex TUI; return the thread id it names."""
    cmd = f"/rename {name}"
    attempts = 0
    while time.monotonic() < deadline:
        screen = _capture(lay, target)
        if _codex_screen(screen) != "idle":
            time.sleep(0.2)
            continue
        composer = _codex_composer(screen) or ""
        if composer != cmd:
            if attempts >= 6:
                raise LabError(f"codex {name}: could not type {cmd!r}; screen: {_tail(screen)}")
            if composer.startswith("/") or attempts:
                _tmux(lay, "send-keys", "-t", target, "C-u")
                time.sleep(0.2)
            attempts += 1
            _type_line(lay, target, cmd)
            t_end = time.monotonic() + 2.0
            while time.monotonic() < t_end and _codex_composer(_capture(lay, target)) != cmd:
                time.sleep(0.1)
            continue
        time.sleep(0.1)
        _tmux(lay, "send-keys", "-t", target, "Enter")
        t_end = time.monotonic() + 5.0
        while time.monotonic() < t_end:
            for tid, tname in codex_thread_names(lay).items():
                if tname == name and tid not in exclude:
                    return tid
            time.sleep(0.05)
        progress(f"  {name}: rename not recorded yet, retrying")
    raise LabError(f"codex {name}: /rename not recorded in session_index.jsonl before the deadline; "
                   f"screen: {_tail(_capture(lay, target))}")


def _new_session(lay: Layout, name: str, cwd: Path, command: list[str], extra_env: dict[str, str],
                 prefix: list[str] | None = None) -> None:
    args = ["new-session", "-d", "-s", name, "-x", str(PANE_WIDTH), "-y", str(PANE_HEIGHT), "-c", str(cwd)]
    for k, v in extra_env.items():
        args += ["-e", f"{k}={v}"]
    _tmux(lay, *args, "--", *command, prefix=prefix)


def bin_dir() -> Path:
    """Where this lab's clients live: the set `relay lab up --clients` recorded in lab.json
    (so later commands drive the same binaries), unless $RELAY_LAB_CLIENTS says otherwise."""
    if not os.environ.get("RELAY_LAB_CLIENTS"):
        st = load(layout().state_file)
        if st is not None and st.clients:
            return Path(st.clients) / "node_modules" / ".bin"
    return _cache_bin_dir()


# ---- up -----------------------------------------------------------------------------------


def up(claude: int = 1, codex: int = 1, progress: Progress = print) -> LabState:
    """Start a fresh lab (cleaning any lab left behind first); wait until all are idle.

    Prints progress through `progress`, then one line per target. Any lab already in the
    directory (running, half-started or crashed) is stopped and removed first. On failure
    the half-started lab is left for inspection (`relay lab status`, `attach`, logs under
    <lab>/logs) and a LabError is raised; the next `up` or `down` cleans it.
    """
    if claude + codex < 1:
        raise LabError("a lab needs at least one session (claude + codex >= 1)")
    with _lab_lock(layout()):
        return _up(claude, codex, progress)


def _up(claude: int, codex: int, progress: Progress) -> LabState:
    t0 = time.monotonic()
    lay = layout()
    problem = lay.socket_path_problem()
    if problem:
        raise LabError(problem)
    if not shutil.which("tmux"):
        raise LabError("tmux not found: install it, e.g. apt-get install tmux")
    _cleanup(lay, progress)  # a lab left behind (crashed or still running) goes first
    versions = install(progress=progress)
    names = session_names(claude, codex)
    _prepare_dirs(lay, names)

    netns = _netns_wanted() and _netns_works()
    if not netns:
        why = "disabled by RELAY_LAB_NETNS" if not _netns_wanted() else "not available here"
        progress(f"private network namespace {why}: the lab runs on the host network "
                 "(the clients are still pointed only at 127.0.0.1)")
    sock = lay.tmux_socket
    state = LabState(lab_dir=str(lay.root), tmux_socket=sock, tmux_socket_path=str(tmux_socket_path(sock)),
                     netns=netns, started_at=time.time(), versions=dict(versions),
                     clients=str(clients_root()) if any_clients() else None,
                     env=env_for(lay),
                     stub=StubInfo(control=str(lay.stub_control), ready_file=str(lay.stub_ready),
                                   log=str(lay.logs / "stubs.log")))
    save(state, lay.state_file)  # from here on a crash leaves a lab.json for the next up/down
    try:
        return _start_all(lay, state, names, netns, t0, progress)
    except BaseException:
        state.phase = "failed"
        save(state, lay.state_file)
        raise


def _start_all(lay: Layout, state: LabState, names: list[tuple[str, str]], netns: bool, t0: float,
               progress: Progress) -> LabState:
    codex = sum(1 for _, k in names if k == CODEX)
    sock = state.tmux_socket
    state.stub = _start_stub(lay, netns, progress)
    state.netns_id = procs.net_ns(state.stub.pid) if netns and state.stub.pid is not None else None
    save(state, lay.state_file)
    for name, kind in names:
        state.stub.sessions[name] = _stub_add_session(state.stub.control, name,
                                                      "anthropic" if kind == CLAUDE else "openai")
    _write_configs(lay, names, state.stub)
    if codex:
        _restore_codex_packages(lay, progress)
    for name, kind in names:
        state.sessions.append(LabSession(kind=kind, name=name, tmux_session=name, cwd=str(lay.workdir(name)),
                                         provider=codex_provider_id(name) if kind == CODEX else None))
    save(state, lay.state_file)

    deadline = time.monotonic() + UP_TIMEOUT
    bins = bin_dir()
    prefix = [sys.executable, _NETNS, "--enter", str(state.stub.pid), "--"] if netns else None

    def start(s: LabSession, first: bool) -> None:
        cmd, extra = _launch_command(lay, state, s, bins)
        if first:
            args = ["new-session", "-d", "-s", s.name, "-x", str(PANE_WIDTH), "-y", str(PANE_HEIGHT),
                    "-c", s.cwd]
            for k, v in extra.items():
                args += ["-e", f"{k}={v}"]
            # Options first, in the same invocation that starts the server: a pane whose
            # client dies at once stays (dead) for diagnosis instead of ending the server.
            # focus-events on: otherwise Claude rotates a "tmux focus-events off" tip into its
            # footer on a timer, which changes the screen with nobody typing.
            _tmux(lay, "set-option", "-g", "remain-on-exit", "on", ";",
                  "set-option", "-g", "history-limit", "5000", ";",
                  "set-option", "-g", "focus-events", "on", ";",
                  *args, "--", *cmd, prefix=prefix)
            pid = _tmux(lay, "display-message", "-p", "#{pid}").text.strip()
            state.tmux_server_pid = int(pid) if pid.isdigit() else None
        else:
            _new_session(lay, s.name, Path(s.cwd), cmd, extra)
        progress(f"started {s.name} ({s.kind})")

    claudes, codexes = state.of_kind(CLAUDE), state.of_kind(CODEX)
    first_batch = claudes + codexes[:1]
    for i, s in enumerate(first_batch):
        start(s, first=(i == 0))
    save(state, lay.state_file)

    named: set[str] = set()
    for s in codexes:
        # One Codex thread at a time, each started only once the one before is named (its
        # rollout is on disk) and has its shell snapshot: see _wait_codex_snapshot.
        if s is not codexes[0]:
            start(s, first=False)
        _wait_codex(lay, state, s, deadline, progress, named)
        named.add(s.thread_id or "")
        _wait_codex_snapshot(lay, s, deadline)
        save(state, lay.state_file)
    for s in claudes:
        _wait_claude(lay, state, s, deadline, progress)
    for s in codexes:  # all renamed; confirm each is still idle with its thread loaded
        _wait_codex_idle(lay, s, deadline)
    _check_codex_snapshots(lay, codexes)
    state.phase = "ready"
    state.ready_at = time.time()
    _refresh(lay, state)
    save(state, lay.state_file)
    progress(f"lab ready in {time.monotonic() - t0:.1f}s: {lay.root} (tmux -L {sock})")
    for line in state.targets():
        progress("  " + line)
    return state


def _launch_command(lay: Layout, state: LabState, s: LabSession, bins: Path) -> tuple[list[str], dict[str, str]]:
    """The command a lab session runs and the environment it adds, for its first start and for
    every restart alike: one builder, so a restarted session cannot come back with less than it
    started with (a Claude session restarted without `--mcp-config` lost its relay MCP server,
    and `--reply-via mcp` to it was refused: issue 16 case 10)."""
    if s.kind == CLAUDE:
        return (lay.claude_command(bins, s.name, mcp_config=lay.claude_mcp_config_path),
                {"ANTHROPIC_BASE_URL": state.stub.sessions[s.name].base_url})
    codexes = state.of_kind(CODEX)
    return lay.codex_command(bins, s.name, first=bool(codexes) and s is codexes[0]), {}


def _pane_info(lay: Layout, s: LabSession) -> dict[str, str] | None:
    return _panes(lay).get(s.tmux_session)


def _fail_dead(lay: Layout, s: LabSession, info: dict[str, str] | None) -> None:
    if info is None:
        raise LabError(f"{s.name}: its tmux session vanished (see {lay.logs})")
    if info["dead"] == "1":
        raise LabError(f"{s.name}: the {s.kind} process exited: {_tail(_capture(lay, s.tmux_session))}")


def _wait_claude(lay: Layout, state: LabState, s: LabSession, deadline: float, progress: Progress) -> None:
    last = ""
    while time.monotonic() < deadline:
        info = _pane_info(lay, s)
        _fail_dead(lay, s, info)
        assert info is not None
        pid = int(info["pane_pid"])
        s.pane_id, s.pane_pid, s.pid = info["pane_id"], pid, pid
        rec = _claude_record(lay, pid)
        st = (rec or {}).get("status") or "unregistered"
        if rec and st == "idle" and rec.get("messagingSocketPath"):
            s.proc_start = rec.get("procStart")
            s.session_id = rec.get("sessionId")
            s.messaging_socket = rec.get("messagingSocketPath")
            s.transcript = str(transcript_path(lay.claude_config, rec.get("cwd") or s.cwd, s.session_id or ""))
            s.alive = s.ready = True
            progress(f"  {s.name}: claude pid {pid} registered, idle")
            return
        if st != last:
            last = st
            progress(f"  {s.name}: {st}{' (' + rec['waitingFor'] + ')' if rec and rec.get('waitingFor') else ''}")
        time.sleep(0.1)
    raise LabError(f"{s.name}: not idle before the deadline (registry {last}); screen: "
                   f"{_tail(_capture(lay, s.tmux_session))}")


def _wait_codex(lay: Layout, state: LabState, s: LabSession, deadline: float, progress: Progress,
                named: set[str]) -> None:
    # 1. the TUI shows its composer and its thread exists (a lock beyond those already named)
    said = False
    cold = not named and not (lay.codex_packages / "app-server-daemon" / "current").exists()
    while time.monotonic() < deadline:
        info = _pane_info(lay, s)
        _fail_dead(lay, s, info)
        assert info is not None
        s.pane_id, s.pane_pid = info["pane_id"], int(info["pane_pid"])
        screen = _capture(lay, s.tmux_session)
        if _codex_screen(screen) == "idle" and _codex_locks(lay) - named:
            break
        if not said and cold and lay.codex_packages.exists() and not (lay.codex_home / "thread-writer-locks").exists():
            progress(f"  {s.name}: codex daemon installing its package copy (first start only)")
            said = True
        time.sleep(0.1)
    else:
        raise LabError(f"{s.name}: codex TUI not ready before the deadline; "
                       f"screen: {_tail(_capture(lay, s.tmux_session))}")
    # 2. name the thread from inside its own TUI (the lab setting itself up)
    tid = _rename_codex(lay, s.tmux_session, s.name, deadline, progress, exclude=named)
    s.thread_id = tid
    s.pid = _codex_tui_pid(s.pane_pid or 0)
    s.proc_start = procs.proc_start(s.pid)
    s.daemon_pid = _codex_daemon_pid(lay)
    progress(f"  {s.name}: codex thread {tid} named")
    _wait_codex_idle(lay, s, deadline)


def codex_shell_snapshots(lay: Layout, thread_id: str) -> list[Path]:
    """The thread's shell snapshot files (`$CODEX_HOME/shell_snapshots/<thread>.<nonce>.sh`)."""
    return _glob(lay.codex_home / "shell_snapshots", f"{thread_id}.*.sh") if thread_id else []


def _wait_codex_snapshot(lay: Layout, s: LabSession, deadline: float) -> None:
    """Wait until the new thread's shell snapshot is on disk, before the next thread starts.

    Why (Codex 0.171.0, measured; adapters/codex.md): every new thread's snapshot task first
    deletes each *other* snapshot whose thread has no rollout file yet, and a fresh thread's
    rollout is written only on its first persisted item (here the lab's `/rename`). Threads
    started together therefore delete each other's fresh snapshots; a thread left without
    one runs its commands as `bash -lc`, whose /etc/profile resets PATH, so the configured
    `[shell_environment_policy] set PATH` is lost (`relay: command not found`, exit 127).
    Named (rollout on disk) and snapshotted before the next starts, no thread's snapshot is
    ever without its rollout when another thread's clean-up runs."""
    while time.monotonic() < deadline:
        if codex_shell_snapshots(lay, s.thread_id or ""):
            return
        time.sleep(0.1)
    raise LabError(f"{s.name}: Codex took no shell snapshot of thread {s.thread_id} before the deadline "
                   f"(nothing in {lay.codex_home / 'shell_snapshots'}); its commands would run without the "
                   "lab's PATH")


def _check_codex_snapshots(lay: Layout, codexes: list[LabSession]) -> None:
    """Every Codex thread of the lab still has its shell snapshot once all are up."""
    lost = [s.name for s in codexes if not codex_shell_snapshots(lay, s.thread_id or "")]
    if lost:
        raise LabError(f"Codex deleted the shell snapshot of {', '.join(lost)} while the lab started, so its "
                       "commands would run without the lab's PATH: `relay lab down`, then `relay lab up`")


def _start_codex_daemon(lay: Layout, state: LabState) -> None:
    """`codex app-server daemon start` in the lab's environment (and network namespace)."""
    prefix = [sys.executable, _NETNS, "--enter", str(state.stub.pid), "--"] if state.netns and state.stub.pid else []
    try:
        proc = subprocess.run([*prefix, str(bin_dir() / "codex"), "app-server", "daemon", "start"], env=_lab_env(lay),
                              cwd=lay.root, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"cannot start the Codex daemon: {exc}") from exc
    if proc.returncode != 0 or _codex_daemon_pid(lay) is None:
        raise LabError(f"the Codex daemon did not start (exit {proc.returncode}): "
                       f"{_tail(proc.stderr or proc.stdout, 2)[:300]}")


def _wait_codex_resumed(lay: Layout, s: LabSession, deadline: float, progress: Progress) -> None:
    """A TUI restarted as `codex resume <thread>`: idle with that thread's lock held."""
    info = _pane_info(lay, s)
    _fail_dead(lay, s, info)
    assert info is not None
    s.pane_id, s.pane_pid = info["pane_id"], int(info["pane_pid"])
    while _codex_daemon_pid(lay) is None:  # a resumed TUI after the daemon died starts it anew
        if time.monotonic() > deadline:
            raise LabError(f"{s.name}: no Codex daemon came up for the resumed thread; screen: "
                           f"{_tail(_capture(lay, s.tmux_session))}")
        time.sleep(0.1)
    _wait_codex_idle(lay, s, deadline)
    s.pid = _codex_tui_pid(s.pane_pid or 0)
    s.proc_start = procs.proc_start(s.pid)
    s.daemon_pid = _codex_daemon_pid(lay)
    progress(f"  {s.name}: codex thread {s.thread_id} resumed")


def _wait_codex_idle(lay: Layout, s: LabSession, deadline: float) -> None:
    while time.monotonic() < deadline:
        screen = _capture(lay, s.tmux_session)
        if s.thread_id in _codex_locks(lay) and _codex_screen(screen) == "idle" \
                and not (_codex_composer(screen) or "").startswith("/"):
            s.alive = s.ready = True
            return
        time.sleep(0.1)
    raise LabError(f"{s.name}: codex not idle with its thread lock before the deadline; "
                   f"screen: {_tail(_capture(lay, s.tmux_session))}")


# ---- status -------------------------------------------------------------------------------


def _refresh(lay: Layout, state: LabState) -> LabState:
    panes = _panes(lay) if tmux_socket_path(state.tmux_socket).exists() else {}
    state.stub.alive = procs.is_alive(state.stub.pid) and Path(state.stub.control).exists()
    daemon = _codex_daemon_pid(lay)
    for s in state.sessions:
        info = panes.get(s.tmux_session)
        if info is None:
            s.alive = False
            continue
        s.pane_id = info["pane_id"]
        s.pane_pid = int(info["pane_pid"])
        if s.kind == CLAUDE:
            s.pid = s.pane_pid
            rec = _claude_record(lay, s.pid)
            if rec and str(rec.get("pid")) == str(s.pid):
                s.proc_start = rec.get("procStart") or s.proc_start
                s.session_id = rec.get("sessionId") or s.session_id
                s.messaging_socket = rec.get("messagingSocketPath") or s.messaging_socket
                if s.session_id:
                    s.transcript = str(transcript_path(lay.claude_config, rec.get("cwd") or s.cwd,
                                                              s.session_id))
            s.alive = info["dead"] != "1" and procs.is_alive(s.pid, s.proc_start)
        else:
            if info["dead"] != "1" and not procs.is_alive(s.pid, s.proc_start):
                s.pid = _codex_tui_pid(s.pane_pid)
                s.proc_start = procs.proc_start(s.pid)
            s.daemon_pid = daemon
            if s.thread_id:
                s.transcript = _codex_rollout(lay, s.thread_id) or s.transcript
                name = codex_thread_names(lay).get(s.thread_id)
                if name:
                    s.name = name
            s.alive = info["dead"] != "1" and procs.is_alive(s.pid, s.proc_start) and daemon is not None
    return state


def status() -> LabState | None:
    """The running (or crashed) lab's state with fresh liveness; None if there is no lab.json."""
    lay = layout()
    state = load(lay.state_file)
    if state is None:
        return None
    return _refresh(lay, state)


def env_for(lay: Layout) -> dict[str, str]:
    return lay.client_env(bin_dir())


def env() -> dict[str, str]:
    """CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_RUNTIME_DIR, TMPDIR, RELAY_LAB_DIR, RELAY_TMUX_SOCKET, PATH."""
    return env_for(layout())


def attach(name: str) -> None:
    """Replace this process with `tmux attach` to session `name` (lab name or tmux session)."""
    lay = layout()
    state = load(lay.state_file)
    if state is None or not _tmux_alive(lay):
        raise LabError("no lab running: start one with `relay lab up`")
    try:
        target = state.session(name).tmux_session
    except KeyError:
        raise LabError(f"no lab session {name!r}; have {', '.join(s.name for s in state.sessions)}") from None
    tmux = shutil.which("tmux") or "tmux"
    env_ = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    os.execve(tmux, ["tmux", "-L", state.tmux_socket, "attach-session", "-t", f"={target}"], env_)


def ensure_lab(claude: int = 1, codex: int = 1, progress: Progress = print) -> LabState:
    """The lab as it runs, starting only what is missing; a fresh `up` only when nothing of it lives.

    Why: an operator's live sessions (their pids, the Codex thread ids, the transcripts a
    check is reading) must survive a `relay lab up` or a REPL start after one client died.
    So a healthy lab big enough is returned untouched; dead sessions of a running lab are
    restarted in place (same name, same tmux session, same stub port) and nothing live is
    touched; only a lab with no live session (or none at all, or one that never became
    ready) is rebuilt from scratch. A running lab is never grown (the clients' configs are
    written once, at start): asking for more sessions than it has is a LabError that says
    how. A dead stub server under live sessions is a LabError too (restarting it would move
    the live clients' model ports).
    """
    lay = layout()
    with _lab_lock(lay):
        st = status()
        if st is None or st.phase != "ready" or not any(s.alive for s in st.sessions):
            return up(claude=claude, codex=codex, progress=progress)
        have_claude, have_codex = len(st.of_kind(CLAUDE)), len(st.of_kind(CODEX))
        if have_claude < claude or have_codex < codex:
            raise LabError(f"the running lab has {have_claude} Claude and {have_codex} Codex sessions, "
                           f"{claude} and {codex} were asked for; a running lab is not grown: `relay lab down`, "
                           f"then `relay lab up --claude {claude} --codex {codex}`")
        dead = [s for s in st.sessions if not s.alive]
        if not dead:
            progress(f"lab already running since {time.strftime('%H:%M:%S', time.localtime(st.started_at))}: "
                     f"reused as it is (settings such as RELAY_LAB_CODEX_SANDBOX apply to a fresh lab: "
                     f"`relay lab down` first)")
            return st
        if not st.stub.alive:
            raise LabError(f"the lab's stub model server died while {', '.join(s.name for s in st.sessions if s.alive)} "
                           "still run (restarting it would move their model ports): `relay lab down`, then "
                           "`relay lab up`")
        return _restart_dead(lay, st, dead, progress)


def _restart_dead(lay: Layout, state: LabState, dead: list[LabSession], progress: Progress) -> LabState:
    """Restart each dead session in its own tmux session, one at a time (a Codex TUI
    that starts the shared daemon goes first); live sessions are not touched."""
    t0 = time.monotonic()
    deadline = t0 + UP_TIMEOUT
    bins = bin_dir()
    named = set(codex_thread_names(lay)) | _codex_locks(lay)  # threads that exist: a restarted TUI names a new one
    waiting = [s for s in dead if s.kind == CODEX and s.pid and procs.is_alive(s.pid, s.proc_start)]
    if waiting and _codex_daemon_pid(lay) is None:
        # Only the daemon died: its TUIs wait ("Reconnecting…") and reconnect by themselves
        # once it runs again (codex.md section 0), so they are kept, not replaced.
        progress(f"the Codex daemon is gone: starting it again ({', '.join(s.name for s in waiting)} "
                 "reconnect by themselves)")
        _start_codex_daemon(lay, state)
        for s in waiting:
            _wait_codex_idle(lay, s, deadline)
            s.daemon_pid = _codex_daemon_pid(lay)
            progress(f"  {s.name}: codex thread {s.thread_id} reconnected (tui pid {s.pid} kept)")
        dead = [s for s in dead if s not in waiting]
        save(state, lay.state_file)
    else:
        waiting = []
    for s in dead:
        progress(f"restarting {s.name} ({s.kind}, pid {s.pid or '-'} is gone); the live sessions are left alone")
        s.alive = s.ready = False
        cmd, extra = _launch_command(lay, state, s, bins)
        if s.kind == CODEX and s.thread_id:  # the same thread again: its id, name, rollout and queue stay valid
            cmd += ["resume", s.thread_id]
        info = _pane_info(lay, s)
        if info is None:
            _new_session(lay, s.tmux_session, Path(s.cwd), cmd, extra)
        else:
            args = ["respawn-pane", "-k", "-t", info["pane_id"], "-c", s.cwd]
            for k, v in extra.items():
                args += ["-e", f"{k}={v}"]
            _tmux(lay, *args, "--", *cmd)
        if s.kind == CLAUDE:
            _wait_claude(lay, state, s, deadline, progress)
        elif s.thread_id:
            _wait_codex_resumed(lay, s, deadline, progress)
        else:
            _wait_codex(lay, state, s, deadline, progress, named)
            named.add(s.thread_id or "")
        save(state, lay.state_file)
    _refresh(lay, state)
    save(state, lay.state_file)
    still = [s.name for s in [*dead, *waiting] if not s.alive]
    if still:
        raise LabError(f"restarted {', '.join(still)} but it is not running: `relay lab status` and the logs "
                       f"under {lay.logs}; `relay lab down` then `relay lab up` starts afresh")
    progress(f"lab repaired in {time.monotonic() - t0:.1f}s: {lay.root} (tmux -L {state.tmux_socket})")
    for line in state.targets():
        progress("  " + line)
    return state


# ---- down ---------------------------------------------------------------------------------


def down(progress: Progress = print) -> bool:
    """End everything the lab started and remove its runtime state. False if nothing ran."""
    lay = layout()
    from relay_repl.lab import second_host

    second_host.down(lay, progress)  # `relay lab up --hosts 2`: its sshd, lab and namespace
    with _lab_lock(lay):
        cleaned = _cleanup(lay, progress)
    if not cleaned:
        progress("no lab running")
        return False
    progress("lab down")
    return True


def _lab_present(lay: Layout) -> bool:
    if lay.state_file.exists() or tmux_socket_path(lay.tmux_socket).exists():
        return True
    if any(d.exists() for d in lay.runtime_dirs) or lay.stub_control.exists() or lay.stub_ready.exists():
        return True
    return bool(procs.lab_processes(lay.root, lay.home))


def _cleanup(lay: Layout, progress: Progress) -> bool:
    """Stop and remove a lab (running, half-started or crashed). True if there was one."""
    if not _lab_present(lay):
        return False
    t0 = time.monotonic()
    state = load(lay.state_file)
    sock_name = state.tmux_socket if state else lay.tmux_socket
    netns_id = state.netns_id if state else None
    env_ = _lab_env(lay)

    # 1. the TUIs: kill the tmux server (SIGHUP to every pane; Claude removes its records)
    pane_pids = [int(p["pane_pid"]) for p in _panes(lay).values() if p["pane_pid"].isdigit()]
    # Not the Codex daemon and its pid-update-loop (children of the first Codex TUI):
    # they survive SIGHUP and are stopped properly below.
    tui_pids = [c for p in pane_pids for c in [p, *procs.descendants(p)]
                if "app-server" not in procs.cmdline(c)]
    if tmux_socket_path(sock_name).exists():
        _tmux(lay, "kill-server", check=False)
    left = procs.wait_gone(tui_pids, 5.0)
    if left:
        procs.terminate(left, grace=1.0)

    # 2. the Codex daemon: ask it to stop, then end anything else of ours
    codex_bin = bin_dir() / "codex"
    if (lay.codex_home / "app-server-daemon" / "daemon.pid").exists() and codex_bin.exists():
        try:
            subprocess.run([str(codex_bin), "app-server", "daemon", "stop"], env=env_, cwd=lay.root,
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass

    # 3. every remaining lab process: stub, pid-update-loop, tool children, stragglers
    extra = [state.stub.pid] if state and state.stub.pid and procs.is_alive(state.stub.pid) else []
    homes = {"CODEX_HOME": (str(lay.codex_home), "codex"), "CLAUDE_CONFIG_DIR": (str(lay.claude_config), "claude")}
    rest = set(procs.lab_processes(lay.root, lay.home, netns_id, client_homes=homes)) | set(extra)
    if rest:
        procs.terminate(sorted(rest))
    again = procs.lab_processes(lay.root, lay.home, netns_id, client_homes=homes)
    if again:
        procs.terminate(again, grace=0.5)

    # 4. sockets and registry files outside the lab dir
    sock_path = tmux_socket_path(sock_name)
    _unlink(sock_path)
    for link_dir in (lay.codex_home / "app-server-control", lay.codex_home / "app-server-daemon"):
        for link in _glob(link_dir, "*.sock"):
            _remove_codex_daemon_target(link)
    for target in lay.codex_daemon_targets():  # even if CODEX_HOME is already gone
        _unlink(target)
        _unlink(Path(str(target) + ".lock"))
        try:
            target.parent.rmdir()
        except OSError:
            pass

    # 5. keep the daemon's package copy, drop the runtime state
    _save_codex_packages(lay)
    for p in list(lay.root.iterdir()) if lay.root.exists() else []:
        if p == lay.cache:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            _unlink(p)
    progress(f"cleaned lab {lay.root} in {time.monotonic() - t0:.1f}s")
    return True


def _glob(d: Path, pattern: str) -> list[Path]:
    try:
        return list(d.glob(pattern))
    except OSError:
        return []


def _remove_codex_daemon_target(link: Path) -> None:
    """Codex control sockets are symlinks into /tmp/codex-daemon-<uid>/: remove ours there."""
    try:
        target = Path(os.readlink(link))
    except OSError:
        return
    if not target.is_absolute():
        target = link.parent / target
    base = Path(f"/tmp/codex-daemon-{os.getuid()}")
    if target.parent == base or target.parent.name == f"codex-daemon-{os.getuid()}":
        _unlink(target)
        _unlink(Path(str(target) + ".lock"))
        try:
            target.parent.rmdir()  # only if empty: other Codex homes may share it
        except OSError:
            pass
    _unlink(link)


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass
