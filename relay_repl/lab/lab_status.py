"""What runs in the lab now (`relay lab status`), and attaching a terminal to one session.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import relay_repl.lab.kind_sessions as kind_sessions
from relay_repl.core.errors import LabError

import relay_repl.lab.procs as procs
from relay_repl.agents.claude_code import transcript_path

from relay_repl.lab.layout import CLAUDE, CODEX, Layout, tmux_socket_path
from relay_repl.lab.state import LabState, load
from relay_repl.lab.labenv import layout
from relay_repl.lab.panes import list_panes, tmux_alive
from relay_repl.lab.readiness import claude_record, codex_daemon_pid, codex_rollout, thread_names, codex_tui_pid


def refresh(lay: Layout, state: LabState) -> LabState:
    panes = list_panes(lay) if tmux_socket_path(state.tmux_socket).exists() else {}
    state.stub.alive = procs.is_alive(state.stub.pid) and Path(state.stub.control).exists()
    daemon = codex_daemon_pid(lay)
    for s in state.sessions:
        info = panes.get(s.tmux_session)
        if info is None:
            s.alive = False
            continue
        s.pane_id = info["pane_id"]
        s.pane_pid = int(info["pane_pid"])
        if s.kind not in (CLAUDE, CODEX):  # started through its kind's own lab pieces
            kind_sessions.refresh(s, info)
        elif s.kind == CLAUDE:
            s.pid = s.pane_pid
            rec = claude_record(lay, s.pid)
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
                s.pid = codex_tui_pid(s.pane_pid)
                s.proc_start = procs.proc_start(s.pid)
            s.daemon_pid = daemon
            if s.thread_id:
                s.transcript = codex_rollout(lay, s.thread_id) or s.transcript
                name = thread_names(lay).get(s.thread_id)
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

