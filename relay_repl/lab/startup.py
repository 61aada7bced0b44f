"""Starting the lab (`relay lab up`) and repairing a running one (`ensure_lab`: only dead sessions
are restarted, in place). Every kind starts through its own lab hooks (kind_sessions): this module
orders the starts and names no kind.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from relay_repl.core.errors import LabError

import relay_repl.lab.procs as procs
from relay_repl.lab.install import any_clients, clients_root, install

from relay_repl.agents.kind import LabLaunch
from relay_repl.lab.layout import PANE_HEIGHT, PANE_WIDTH, Layout, driver, lab_kinds, session_names, tmux_socket_path
from relay_repl.lab.state import LabSession, LabState, StubInfo, save
import relay_repl.lab.kind_sessions as kind_sessions
from relay_repl.lab.kind_sessions import PaneOps, apply, lab_counts, record, wait_ready
from relay_repl.lab.client_setup import lab_context, prepare_dirs, prepare_kinds, run_prefix, write_configs
from relay_repl.lab.lab_status import refresh, status
from relay_repl.lab.labenv import (
    Progress,
    UP_TIMEOUT,
    bin_dir,
    env_for,
    lab_lock,
    layout,
    netns_wanted,
    netns_works,
)
from relay_repl.lab.panes import new_session, pane_info, tmux
from relay_repl.lab.shutdown import cleanup
from relay_repl.lab.stub_start import start_stub, stub_add_session


def up(progress: Progress = print, *, more: Mapping[str, int] | None = None, **flags: int) -> LabState:
    """Start a fresh lab (cleaning any lab left behind first); wait until all are idle.

    Counts: `up(claude=1, codex=1)` by each lab kind's count flag, or `more={kind: n}`; a kind not
    given starts its default count. Prints progress through `progress`, then one line per target.
    Any lab already in the directory (running, half-started or crashed) is stopped and removed
    first. On failure the half-started lab is left for inspection (`relay lab status`, `attach`,
    logs under <lab>/logs) and a LabError is raised; the next `up` or `down` cleans it.
    """
    counts = {k: n for k, n in lab_counts(flags, more).items() if n}
    if sum(counts.values()) < 1:
        raise LabError("a lab needs at least one session")
    with lab_lock(layout()):
        return _up(counts, progress)


def up_counts(counts: Mapping[str, int], progress: Progress = print) -> LabState:
    """`up` for {kind: count}."""
    return up(progress, more=counts)


def ensure_lab_counts(counts: Mapping[str, int], progress: Progress = print) -> LabState:
    """`ensure_lab` for {kind: count}."""
    return ensure_lab(progress, more=counts)


def _up(counts: Mapping[str, int], progress: Progress) -> LabState:
    t0 = time.monotonic()
    lay = layout()
    problem = lay.socket_path_problem()
    if problem:
        raise LabError(problem)
    if not shutil.which("tmux"):
        raise LabError("tmux not found: install it, e.g. apt-get install tmux")
    cleanup(lay, progress)  # a lab left behind (crashed or still running) goes first
    names = session_names(counts)
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
    sock = state.tmux_socket
    state.stub = start_stub(lay, netns, progress)
    state.netns_id = procs.net_ns(state.stub.pid) if netns and state.stub.pid is not None else None
    save(state, lay.state_file)
    for name, kind in names:
        api = str(kind_sessions.own_kind(kind).spec.stub_api)
        state.stub.sessions[name] = stub_add_session(state.stub.control, name, api)
    bins = bin_dir()
    ctx = lab_context(lay, state, bins)
    write_configs(ctx, names)
    prepare_kinds(ctx, names, progress)
    for name, kind in names:
        state.sessions.append(LabSession(kind=kind, name=name, tmux_session=name, cwd=str(lay.workdir(name))))
    save(state, lay.state_file)

    deadline = time.monotonic() + UP_TIMEOUT
    prefix = run_prefix(state) or None
    launches: dict[str, LabLaunch] = {}

    def start(s: LabSession, first: bool) -> None:
        launch = launches[s.name] = kind_sessions.launch(ctx, state, s)
        cmd, extra = launch.argv(), dict(launch.env)
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

    # a serial kind's sessions start one at a time, each once the one before is ready (LabSpec.serial);
    # every other session starts at once and comes up meanwhile
    kinds = [k for k in lab_kinds() if state.of_kind(k.facts.kind)]
    serial = [k for k in kinds if driver(k).spec.serial]
    first_batch = [s for s in state.sessions if s.kind not in {k.facts.kind for k in serial} or s is state.of_kind(s.kind)[0]]
    for i, s in enumerate(first_batch):
        start(s, first=(i == 0))
    save(state, lay.state_file)

    for k in serial:
        for s in state.of_kind(k.facts.kind):
            if s.name not in launches:
                start(s, first=False)
            wait_ready(lay, ctx, s, launches[s.name], deadline, progress)
            save(state, lay.state_file)
    for s in state.sessions:
        if not s.ready:
            wait_ready(lay, ctx, s, launches[s.name], deadline, progress)
            save(state, lay.state_file)
    for k in kinds:  # all up: each kind confirms its own still are
        driver(k).settled(ctx, [(record(s), PaneOps(lay, s, progress)) for s in state.of_kind(k.facts.kind)], deadline)
    state.phase = "ready"
    state.ready_at = time.time()
    refresh(lay, state)
    save(state, lay.state_file)
    progress(f"lab ready in {time.monotonic() - t0:.1f}s: {lay.root} (tmux -L {sock})")
    for line in state.targets():
        progress("  " + line)
    return state


def ensure_lab(progress: Progress = print, *, more: Mapping[str, int] | None = None, **flags: int) -> LabState:
    """The lab as it runs, starting only what is missing; a fresh `up` only when nothing of it lives.

    Counts as for `up`. Why: an operator's live sessions (their pids, the Codex thread ids, the
    transcripts a check is reading) must survive a `relay lab up` or a REPL start after one client
    died. So a healthy lab big enough is returned untouched; dead sessions of a running lab are
    restarted in place (same name, same tmux session, same stub port) and nothing live is
    touched; only a lab with no live session (or none at all, or one that never became
    ready) is rebuilt from scratch. A running lab is never grown (the clients' configs are
    written once, at start): asking for more sessions than it has is a LabError that says
    how. A dead stub server under live sessions is a LabError too (restarting it would move
    the live clients' model ports).
    """
    counts = lab_counts(flags, more)
    lay = layout()
    with lab_lock(lay):
        st = status()
        if st is None or st.phase != "ready" or not any(s.alive for s in st.sessions):
            return up(progress, more=counts)
        short = {k: n for k, n in counts.items() if len(st.of_kind(k)) < n}
        if short:
            have = ", ".join(f"{len(st.of_kind(k))} {k}" for k in counts)
            flags_ = " ".join(f"--{driver(k).spec.count_flag} {counts[k.facts.kind]}" for k in lab_kinds()
                              if k.facts.kind in counts)
            raise LabError(f"the running lab has {have} sessions, fewer {', '.join(short)} than asked for "
                           f"({short}); a running lab is not grown: `relay lab down`, then `relay lab up {flags_}`")
        dead = [s for s in st.sessions if not s.alive]
        if not dead:
            progress(f"lab already running since {time.strftime('%H:%M:%S', time.localtime(st.started_at))}: "
                     f"reused as it is (the RELAY_LAB_* settings apply to a fresh lab: "
                     f"`relay lab down` first)")
            return st
        if not st.stub.alive:
            raise LabError(f"the lab's stub model server died while {', '.join(s.name for s in st.sessions if s.alive)} "
                           "still run (restarting it would move their model ports): `relay lab down`, then "
                           "`relay lab up`")
        return restart_dead(lay, st, dead, progress)


def restart_dead(lay: Layout, state: LabState, dead: list[LabSession], progress: Progress) -> LabState:
    """Restart each dead session in its own tmux session, one at a time; live sessions are not
    touched. A kind may first bring some back without a restart (`LabDriver.revive`: a shared daemon gone
    under live clients)."""
    t0 = time.monotonic()
    deadline = t0 + UP_TIMEOUT
    ctx = lab_context(lay, state, bin_dir())
    revived: list[LabSession] = []
    for k in lab_kinds():
        group = [s for s in dead if s.kind == k.facts.kind]
        if not group:
            continue
        back = {r.name: r for r in driver(k).revive(ctx, [(record(s), PaneOps(lay, s, progress)) for s in group],
                                                 deadline)}
        for s in group:
            if s.name in back:
                apply(s, back[s.name])
                s.ready = s.alive
                revived.append(s)
        if back:
            save(state, lay.state_file)
    dead = [s for s in dead if s not in revived]
    for s in dead:
        progress(f"restarting {s.name} ({s.kind}, pid {s.pid or '-'} is gone); the live sessions are left alone")
        s.alive = s.ready = False
        launch = kind_sessions.resume(ctx, state, s)
        cmd, extra = launch.argv(), dict(launch.env)
        info = pane_info(lay, s)
        if info is None:
            new_session(lay, s.tmux_session, Path(s.cwd), cmd, extra)
        else:
            args = ["respawn-pane", "-k", "-t", info["pane_id"], "-c", s.cwd]
            for k_, v in extra.items():
                args += ["-e", f"{k_}={v}"]
            tmux(lay, *args, "--", *cmd)
        wait_ready(lay, ctx, s, launch, deadline, progress)
        save(state, lay.state_file)
    refresh(lay, state)
    save(state, lay.state_file)
    still = [s.name for s in [*dead, *revived] if not s.alive]
    if still:
        raise LabError(f"restarted {', '.join(still)} but it is not running: `relay lab status` and the logs "
                       f"under {lay.logs}; `relay lab down` then `relay lab up` starts afresh")
    progress(f"lab repaired in {time.monotonic() - t0:.1f}s: {lay.root} (tmux -L {state.tmux_socket})")
    for line in state.targets():
        progress("  " + line)
    return state
