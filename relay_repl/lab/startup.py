"""Starting the lab (`relay lab up`) and repairing a running one (`ensure_lab`: only dead sessions
are restarted, in place).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from relay_repl.core.errors import LabError

import relay_repl.lab.procs as procs
from relay_repl.lab.install import any_clients, clients_root, install

from relay_repl.lab.layout import (
    CLAUDE,
    CODEX,
    PANE_HEIGHT,
    PANE_WIDTH,
    Layout,
    codex_provider_id,
    session_names,
    tmux_socket_path,
)
from relay_repl.lab.state import LabSession, LabState, StubInfo, save
import relay_repl.lab.kind_sessions as kind_sessions
from relay_repl.lab.client_setup import lab_context, launch_command, prepare_dirs, restore_codex_packages, write_configs
from relay_repl.lab.lab_status import refresh, status
from relay_repl.lab.labenv import (
    NETNS,
    Progress,
    UP_TIMEOUT,
    bin_dir,
    env_for,
    lab_env,
    lab_lock,
    layout,
    netns_wanted,
    netns_works,
)
from relay_repl.lab.panes import new_session, pane_info, tail, tmux
from relay_repl.lab.readiness import (
    check_codex_snapshots,
    codex_daemon_pid,
    codex_locks,
    thread_names,
    wait_claude,
    wait_codex,
    wait_codex_idle,
    wait_codex_resumed,
    wait_codex_snapshot,
)
from relay_repl.lab.shutdown import cleanup
from relay_repl.lab.stub_start import start_stub, stub_add_session


def up(claude: int = 1, codex: int = 1, progress: Progress = print, *, more: Mapping[str, int] | None = None) -> LabState:
    """Start a fresh lab (cleaning any lab left behind first); wait until all are idle.

    Prints progress through `progress`, then one line per target. Any lab already in the
    directory (running, half-started or crashed) is stopped and removed first. On failure
    the half-started lab is left for inspection (`relay lab status`, `attach`, logs under
    <lab>/logs) and a LabError is raised; the next `up` or `down` cleans it. `more`: sessions of
    other registered kinds ({kind: count}), each started through its own lab pieces (kind_sessions).
    """
    more = {k: n for k, n in (more or {}).items() if n}
    if claude + codex + sum(more.values()) < 1:
        raise LabError("a lab needs at least one session")
    with lab_lock(layout()):
        return _up(claude, codex, progress, more)


def split_counts(counts: Mapping[str, int]) -> tuple[int, int, dict[str, int]]:
    """{kind: count} (the CLI's, one flag per lab kind) -> the lab's own two kinds and the rest."""
    rest = dict(counts)
    return rest.pop(CLAUDE, 0), rest.pop(CODEX, 0), rest


def up_counts(counts: Mapping[str, int], progress: Progress = print) -> LabState:
    """`up` for {kind: count}."""
    claude, codex, more = split_counts(counts)
    return up(claude, codex, progress, more=more)


def ensure_lab_counts(counts: Mapping[str, int], progress: Progress = print) -> LabState:
    """`ensure_lab` for {kind: count}."""
    claude, codex, more = split_counts(counts)
    return ensure_lab(claude, codex, progress, more=more)


def _up(claude: int, codex: int, progress: Progress, more: Mapping[str, int]) -> LabState:
    t0 = time.monotonic()
    lay = layout()
    problem = lay.socket_path_problem()
    if problem:
        raise LabError(problem)
    if not shutil.which("tmux"):
        raise LabError("tmux not found: install it, e.g. apt-get install tmux")
    cleanup(lay, progress)  # a lab left behind (crashed or still running) goes first
    names = session_names(claude, codex, more)
    versions = install(progress=progress, kinds=sorted({k for _, k in names}))
    prepare_dirs(lay, names)

    netns = netns_wanted() and netns_works()
    if not netns:
        why = "disabled by RELAY_LAB_NETNS" if not netns_wanted() else "not available here"
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
    others = [(n, k) for n, k in names if k not in (CLAUDE, CODEX)]  # kinds started through their own pieces
    sock = state.tmux_socket
    state.stub = start_stub(lay, netns, progress)
    state.netns_id = procs.net_ns(state.stub.pid) if netns and state.stub.pid is not None else None
    save(state, lay.state_file)
    for name, kind in names:
        api = ("anthropic" if kind == CLAUDE else "openai") if kind in (CLAUDE, CODEX) else \
            str(kind_sessions.own_kind(kind).lab().stub_api)  # type: ignore[union-attr]
        state.stub.sessions[name] = stub_add_session(state.stub.control, name, api)
    write_configs(lay, names, state.stub)
    if others:
        kind_sessions.write_files(lab_context(lay, state, bin_dir()),
                                  {k: [n for n, kk in others if kk == k] for _, k in others})
    if codex:
        restore_codex_packages(lay, progress)
    for name, kind in names:
        state.sessions.append(LabSession(kind=kind, name=name, tmux_session=name, cwd=str(lay.workdir(name)),
                                         provider=codex_provider_id(name) if kind == CODEX else None))
    save(state, lay.state_file)

    deadline = time.monotonic() + UP_TIMEOUT
    bins = bin_dir()
    prefix = [sys.executable, NETNS, "--enter", str(state.stub.pid), "--"] if netns else None

    def start(s: LabSession, first: bool) -> None:
        cmd, extra = launch_command(lay, state, s, bins)
        if first:
            args = ["new-session", "-d", "-s", s.name, "-x", str(PANE_WIDTH), "-y", str(PANE_HEIGHT),
                    "-c", s.cwd]
            for k, v in extra.items():
                args += ["-e", f"{k}={v}"]
            # Options first, in the same invocation that starts the server: a pane whose
            # client dies at once stays (dead) for diagnosis instead of ending the server.
            # focus-events on: otherwise Claude rotates a "tmux focus-events off" tip into its
            # footer on a timer, which changes the screen with nobody typing.
            tmux(lay, "set-option", "-g", "remain-on-exit", "on", ";",
                  "set-option", "-g", "history-limit", "5000", ";",
                  "set-option", "-g", "focus-events", "on", ";",
                  *args, "--", *cmd, prefix=prefix)
            pid = tmux(lay, "display-message", "-p", "#{pid}").text.strip()
            state.tmux_server_pid = int(pid) if pid.isdigit() else None
        else:
            new_session(lay, s.name, Path(s.cwd), cmd, extra)
        progress(f"started {s.name} ({s.kind})")

    claudes, codexes = state.of_kind(CLAUDE), state.of_kind(CODEX)
    own = [s for s in state.sessions if s.kind not in (CLAUDE, CODEX)]
    first_batch = claudes + own + codexes[:1]
    for i, s in enumerate(first_batch):
        start(s, first=(i == 0))
    save(state, lay.state_file)

    named: set[str] = set()
    for s in codexes:
        # One Codex thread at a time, each started only once the one before is named (its
        # rollout is on disk) and has its shell snapshot: see wait_codex_snapshot.
        if s is not codexes[0]:
            start(s, first=False)
        wait_codex(lay, state, s, deadline, progress, named)
        named.add(s.thread_id or "")
        wait_codex_snapshot(lay, s, deadline)
        save(state, lay.state_file)
    for s in claudes:
        wait_claude(lay, state, s, deadline, progress)
    if own:
        ctx = lab_context(lay, state, bins)
        for s in own:
            kind_sessions.wait_ready(lay, ctx, s, deadline, progress)
            save(state, lay.state_file)
    for s in codexes:  # all renamed; confirm each is still idle with its thread loaded
        wait_codex_idle(lay, s, deadline)
    check_codex_snapshots(lay, codexes)
    state.phase = "ready"
    state.ready_at = time.time()
    refresh(lay, state)
    save(state, lay.state_file)
    progress(f"lab ready in {time.monotonic() - t0:.1f}s: {lay.root} (tmux -L {sock})")
    for line in state.targets():
        progress("  " + line)
    return state


def start_codex_daemon(lay: Layout, state: LabState) -> None:
    """`codex app-server daemon start` in the lab's environment (and network namespace)."""
    prefix = [sys.executable, NETNS, "--enter", str(state.stub.pid), "--"] if state.netns and state.stub.pid else []
    try:
        proc = subprocess.run([*prefix, str(bin_dir() / "codex"), "app-server", "daemon", "start"], env=lab_env(lay),
                              cwd=lay.root, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"cannot start the Codex daemon: {exc}") from exc
    if proc.returncode != 0 or codex_daemon_pid(lay) is None:
        raise LabError(f"the Codex daemon did not start (exit {proc.returncode}): "
                       f"{tail(proc.stderr or proc.stdout, 2)[:300]}")


def ensure_lab(claude: int = 1, codex: int = 1, progress: Progress = print, *,
               more: Mapping[str, int] | None = None) -> LabState:
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
    with lab_lock(lay):
        st = status()
        if st is None or st.phase != "ready" or not any(s.alive for s in st.sessions):
            return up(claude=claude, codex=codex, progress=progress, more=more)
        have_claude, have_codex = len(st.of_kind(CLAUDE)), len(st.of_kind(CODEX))
        short = {k: n for k, n in (more or {}).items() if len(st.of_kind(k)) < n}
        if short:
            raise LabError(f"the running lab has fewer {', '.join(short)} sessions than asked for ({short}); a running "
                           "lab is not grown: `relay lab down`, then `relay lab up` with the counts")
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
        return restart_dead(lay, st, dead, progress)


def restart_dead(lay: Layout, state: LabState, dead: list[LabSession], progress: Progress) -> LabState:
    """Restart each dead session in its own tmux session, one at a time (a Codex TUI
    that starts the shared daemon goes first); live sessions are not touched."""
    t0 = time.monotonic()
    deadline = t0 + UP_TIMEOUT
    bins = bin_dir()
    named = set(thread_names(lay)) | codex_locks(lay)  # threads that exist: a restarted TUI names a new one
    waiting = [s for s in dead if s.kind == CODEX and s.pid and procs.is_alive(s.pid, s.proc_start)]
    if waiting and codex_daemon_pid(lay) is None:
        # Only the daemon died: its TUIs wait ("Reconnecting…") and reconnect by themselves
        # once it runs again (codex.md section 0), so they are kept, not replaced.
        progress(f"the Codex daemon is gone: starting it again ({', '.join(s.name for s in waiting)} "
                 "reconnect by themselves)")
        start_codex_daemon(lay, state)
        for s in waiting:
            wait_codex_idle(lay, s, deadline)
            s.daemon_pid = codex_daemon_pid(lay)
            progress(f"  {s.name}: codex thread {s.thread_id} reconnected (tui pid {s.pid} kept)")
        dead = [s for s in dead if s not in waiting]
        save(state, lay.state_file)
    else:
        waiting = []
    for s in dead:
        progress(f"restarting {s.name} ({s.kind}, pid {s.pid or '-'} is gone); the live sessions are left alone")
        s.alive = s.ready = False
        cmd, extra = launch_command(lay, state, s, bins)
        if s.kind == CODEX and s.thread_id:  # the same thread again: its id, name, rollout and queue stay valid
            cmd += ["resume", s.thread_id]
        info = pane_info(lay, s)
        if info is None:
            new_session(lay, s.tmux_session, Path(s.cwd), cmd, extra)
        else:
            args = ["respawn-pane", "-k", "-t", info["pane_id"], "-c", s.cwd]
            for k, v in extra.items():
                args += ["-e", f"{k}={v}"]
            tmux(lay, *args, "--", *cmd)
        if s.kind == CLAUDE:
            wait_claude(lay, state, s, deadline, progress)
        elif s.kind != CODEX:
            kind_sessions.wait_ready(lay, lab_context(lay, state, bins), s, deadline, progress)
        elif s.thread_id:
            wait_codex_resumed(lay, s, deadline, progress)
        else:
            wait_codex(lay, state, s, deadline, progress, named)
            named.add(s.thread_id or "")
        save(state, lay.state_file)
    refresh(lay, state)
    save(state, lay.state_file)
    still = [s.name for s in [*dead, *waiting] if not s.alive]
    if still:
        raise LabError(f"restarted {', '.join(still)} but it is not running: `relay lab status` and the logs "
                       f"under {lay.logs}; `relay lab down` then `relay lab up` starts afresh")
    progress(f"lab repaired in {time.monotonic() - t0:.1f}s: {lay.root} (tmux -L {state.tmux_socket})")
    for line in state.targets():
        progress("  " + line)
    return state

