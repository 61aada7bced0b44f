"""What runs in the lab now (`relay lab status`), and attaching a terminal to one session.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import relay_repl.lab.kind_sessions as kind_sessions
from relay_repl.core.errors import LabError

import relay_repl.lab.procs as procs

from relay_repl.lab.client_setup import lab_context
from relay_repl.lab.layout import Layout, tmux_socket_path
from relay_repl.lab.state import LabSession, LabState, load
from relay_repl.lab.labenv import bin_dir, layout
from relay_repl.lab.panes import list_panes, tmux_alive


def refresh(lay: Layout, state: LabState) -> LabState:
    """Each session as its kind reads it now (kind_sessions.refresh); a session whose pane is gone is dead."""
    panes = list_panes(lay) if tmux_socket_path(state.tmux_socket).exists() else {}
    state.stub.alive = procs.is_alive(state.stub.pid) and Path(state.stub.control).exists()
    ctx = lab_context(lay, state, bin_dir()) if panes else None
    for s in state.sessions:
        info = panes.get(s.tmux_session)
        if info is None or ctx is None:
            s.alive = False
            continue
        kind_sessions.refresh(ctx, s, info)
    return state


def session_name_now(state: LabState, s: LabSession) -> str:
    """The session's name as its kind reads it now (a client may rename its session from inside)."""
    lay = Layout.at(state.lab_dir)
    now = kind_sessions.own_kind(s.kind).refresh(lab_context(lay, state, bin_dir()), kind_sessions.record(s),
                                                     s.pane_pid or 0, dead=False)
    return now.name or s.name


def status() -> LabState | None:
    """The running (or crashed) lab's state with fresh liveness; None if there is no lab.json."""
    lay = layout()
    state = load(lay.state_file)
    if state is None:
        return None
    return refresh(lay, state)


def attach(name: str) -> None:
    """Replace this process with `tmux attach` to session `name` (lab name or tmux session)."""
    lay = layout()
    state = load(lay.state_file)
    if state is None or not tmux_alive(lay):
        raise LabError("no lab running: start one with `relay lab up`")
    try:
        target = state.session(name).tmux_session
    except KeyError:
        raise LabError(f"no lab session {name!r}; have {', '.join(s.name for s in state.sessions)}") from None
    tmux = shutil.which("tmux") or "tmux"
    env_ = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    os.execve(tmux, ["tmux", "-L", state.tmux_socket, "attach-session", "-t", f"={target}"], env_)

