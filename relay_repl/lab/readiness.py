"""Waiting until each lab session is ready: Claude by its registry record, Codex by the product's
screen classifier, its thread lock, its name in session_index.jsonl and its shell snapshot.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from urllib.request import pathname2url

from relay_repl.core.errors import LabError
from relay_repl.system.polling import poll_until_sync

import relay_repl.lab.procs as procs
from relay_repl.agents.claude_code import transcript_path
from relay_repl.agents.codex import is_codex_tui, read_session_index

from relay_repl.agents.screens.model import ScreenReading
from relay_repl.lab.layout import CODEX, Layout
from relay_repl.lab.state import LabSession, LabState
from relay_repl.lab.labenv import Progress, glob_in
from relay_repl.lab.panes import capture, fail_dead, pane_info, read_screen, screen_idle, tail, tmux, type_line


def claude_record(lay: Layout, pid: int) -> dict | None:
    try:
        return json.loads((lay.claude_config / "sessions" / f"{pid}.json").read_text())
    except (OSError, ValueError):
        return None


def thread_names(lay: Layout) -> dict[str, str]:
    """thread id -> current thread name, read by the Codex agent's own reader of session_index.jsonl."""
    rows = read_session_index(lay.codex_home / "session_index.jsonl")
    return {tid: str(r["thread_name"]) for tid, r in rows.items() if r.get("thread_name") is not None}


def codex_locks(lay: Layout) -> set[str]:
    d = lay.codex_home / "thread-writer-locks"
    try:
        return {p.name[:-5] for p in d.iterdir() if p.name.endswith(".lock") and not p.name.startswith(".")}
    except OSError:
        return set()


def codex_daemon_pid(lay: Layout) -> int | None:
    try:
        pid = int(json.loads((lay.codex_home / "app-server-daemon" / "daemon.pid").read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if procs.is_alive(pid) else None


def codex_tui_pid(pane_pid: int) -> int | None:
    """The native codex TUI: the pane runs the npm node wrapper, which spawns it (the Codex
    agent's rule for which process is a TUI, `is_codex_tui`)."""
    if procs.exe_name(pane_pid) == "codex":
        return pane_pid
    for child in procs.children(pane_pid):
        if procs.exe_name(child) == "codex" or is_codex_tui(procs.cmdline(child)[:1]):
            return child
    return None


def codex_rollout(lay: Layout, thread_id: str) -> str | None:
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


def _composer_text(lay: Layout, target: str) -> str | None:
    """What the classifier reads in the pane's composer (a draft, or a dim placeholder), or None."""
    reading = read_screen(lay, CODEX, target)
    return reading.composer_text if reading else None


def _clear_composer(lay: Layout, target: str) -> None:
    """Ctrl-U, then a pause (keystroke pacing, not a wait for anything) before the next typing."""
    tmux(lay, "send-keys", "-t", target, "C-u")
    time.sleep(0.2)


def _press_enter(lay: Layout, target: str) -> None:
    """Enter in its own tmux call after a pause: Codex drops an Enter in the same burst as the text."""
    time.sleep(0.1)
    tmux(lay, "send-keys", "-t", target, "Enter")


def _rename_codex(lay: Layout, target: str, name: str, deadline: float, progress: Progress,
                  exclude: frozenset[str] | set[str] = frozenset()) -> str:
    """Type `/rename <name>` into a fresh idle Codex TUI; return the thread id it names."""
    cmd = f"/rename {name}"
    attempts = 0

    def idle_reading() -> ScreenReading | None:
        reading = read_screen(lay, CODEX, target)
        return reading if screen_idle(reading) else None

    def renamed() -> str | None:
        return next((tid for tid, tname in thread_names(lay).items() if tname == name and tid not in exclude),
                    None)

    while time.monotonic() < deadline:
        reading = poll_until_sync(idle_reading, timeout=deadline - time.monotonic(), interval=0.2)
        if reading is None:
            break
        composer = reading.composer_text or ""
        if composer != cmd:
            if attempts >= 6:
                raise LabError(f"codex {name}: could not type {cmd!r}; screen: {tail(capture(lay, target))}")
            if composer.startswith("/") or attempts:
                _clear_composer(lay, target)
            attempts += 1
            type_line(lay, target, cmd)
            poll_until_sync(lambda: True if _composer_text(lay, target) == cmd else None, timeout=2.0, interval=0.1)
            continue
        _press_enter(lay, target)
        tid = poll_until_sync(renamed, timeout=5.0, interval=0.05)
        if tid is not None:
            return tid
        progress(f"  {name}: rename not recorded yet, retrying")
    raise LabError(f"codex {name}: /rename not recorded in session_index.jsonl before the deadline; "
                   f"screen: {tail(capture(lay, target))}")


def wait_claude(lay: Layout, state: LabState, s: LabSession, deadline: float, progress: Progress) -> None:
    last = ""

    def registered_idle() -> bool | None:
        nonlocal last
        info = pane_info(lay, s)
        fail_dead(lay, s, info)
        assert info is not None
        pid = int(info["pane_pid"])
        s.pane_id, s.pane_pid, s.pid = info["pane_id"], pid, pid
        rec = claude_record(lay, pid)
        st = (rec or {}).get("status") or "unregistered"
        if rec and st == "idle" and rec.get("messagingSocketPath"):
            s.proc_start = rec.get("procStart")
            s.session_id = rec.get("sessionId")
            s.messaging_socket = rec.get("messagingSocketPath")
            s.transcript = str(transcript_path(lay.claude_config, rec.get("cwd") or s.cwd, s.session_id or ""))
            s.alive = s.ready = True
            progress(f"  {s.name}: claude pid {pid} registered, idle")
            return True
        if st != last:
            last = st
            progress(f"  {s.name}: {st}{' (' + rec['waitingFor'] + ')' if rec and rec.get('waitingFor') else ''}")
        return None

    if poll_until_sync(registered_idle, timeout=deadline - time.monotonic(), interval=0.1):
        return
    raise LabError(f"{s.name}: not idle before the deadline (registry {last}); screen: "
                   f"{tail(capture(lay, s.tmux_session))}")


def wait_codex(lay: Layout, state: LabState, s: LabSession, deadline: float, progress: Progress,
                named: set[str]) -> None:
    # 1. the TUI shows its composer and its thread exists (a lock beyond those already named)
    said = False
    cold = not named and not (lay.codex_packages / "app-server-daemon" / "current").exists()

    def tui_ready() -> bool | None:
        nonlocal said
        info = pane_info(lay, s)
        fail_dead(lay, s, info)
        assert info is not None
        s.pane_id, s.pane_pid = info["pane_id"], int(info["pane_pid"])
        if screen_idle(read_screen(lay, CODEX, s.tmux_session)) and codex_locks(lay) - named:
            return True
        if not said and cold and lay.codex_packages.exists() and not (lay.codex_home / "thread-writer-locks").exists():
            progress(f"  {s.name}: codex daemon installing its package copy (first start only)")
            said = True
        return None

    if not poll_until_sync(tui_ready, timeout=deadline - time.monotonic(), interval=0.1):
        raise LabError(f"{s.name}: codex TUI not ready before the deadline; "
                       f"screen: {tail(capture(lay, s.tmux_session))}")
    # 2. name the thread from inside its own TUI (the lab setting itself up)
    tid = _rename_codex(lay, s.tmux_session, s.name, deadline, progress, exclude=named)
    s.thread_id = tid
    s.pid = codex_tui_pid(s.pane_pid or 0)
    s.proc_start = procs.proc_start(s.pid)
    s.daemon_pid = codex_daemon_pid(lay)
    progress(f"  {s.name}: codex thread {tid} named")
    wait_codex_idle(lay, s, deadline)


def thread_shell_snapshots(lay: Layout, thread_id: str) -> list[Path]:
    """The thread's shell snapshot files (`$CODEX_HOME/shell_snapshots/<thread>.<nonce>.sh`)."""
    return glob_in(lay.codex_home / "shell_snapshots", f"{thread_id}.*.sh") if thread_id else []


def wait_codex_snapshot(lay: Layout, s: LabSession, deadline: float) -> None:
    """Wait until the new thread's shell snapshot is on disk, before the next thread starts.

    Why (Codex 0.171.0, measured; adapters/codex.md): every new thread's snapshot task first
    deletes each *other* snapshot whose thread has no rollout file yet, and a fresh thread's
    rollout is written only on its first persisted item (here the lab's `/rename`). Threads
    started together therefore delete each other's fresh snapshots; a thread left without
    one runs its commands as `bash -lc`, whose /etc/profile resets PATH, so the configured
    `[shell_environment_policy] set PATH` is lost (`relay: command not found`, exit 127).
    Named (rollout on disk) and snapshotted before the next starts, no thread's snapshot is
    ever without its rollout when another thread's clean-up runs."""
    if poll_until_sync(lambda: thread_shell_snapshots(lay, s.thread_id or "") or None,
                       timeout=deadline - time.monotonic(), interval=0.1):
        return
    raise LabError(f"{s.name}: Codex took no shell snapshot of thread {s.thread_id} before the deadline "
                   f"(nothing in {lay.codex_home / 'shell_snapshots'}); its commands would run without the "
                   "lab's PATH")


def check_codex_snapshots(lay: Layout, codexes: list[LabSession]) -> None:
    """Every Codex thread of the lab still has its shell snapshot once all are up."""
    lost = [s.name for s in codexes if not thread_shell_snapshots(lay, s.thread_id or "")]
    if lost:
        raise LabError(f"Codex deleted the shell snapshot of {', '.join(lost)} while the lab started, so its "
                       "commands would run without the lab's PATH: `relay lab down`, then `relay lab up`")


def wait_codex_resumed(lay: Layout, s: LabSession, deadline: float, progress: Progress) -> None:
    """A TUI restarted as `codex resume <thread>`: idle with that thread's lock held."""
    info = pane_info(lay, s)
    fail_dead(lay, s, info)
    assert info is not None
    s.pane_id, s.pane_pid = info["pane_id"], int(info["pane_pid"])
    # a resumed TUI after the daemon died starts it anew
    if poll_until_sync(lambda: codex_daemon_pid(lay), timeout=deadline - time.monotonic(), interval=0.1) is None:
        raise LabError(f"{s.name}: no Codex daemon came up for the resumed thread; screen: "
                       f"{tail(capture(lay, s.tmux_session))}")
    wait_codex_idle(lay, s, deadline)
    s.pid = codex_tui_pid(s.pane_pid or 0)
    s.proc_start = procs.proc_start(s.pid)
    s.daemon_pid = codex_daemon_pid(lay)
    progress(f"  {s.name}: codex thread {s.thread_id} resumed")


def wait_codex_idle(lay: Layout, s: LabSession, deadline: float) -> None:
    def idle_with_lock() -> bool | None:
        reading = read_screen(lay, CODEX, s.tmux_session)
        return True if (s.thread_id in codex_locks(lay) and screen_idle(reading)
                        and not (reading and reading.composer_text or "").startswith("/")) else None

    if poll_until_sync(idle_with_lock, timeout=deadline - time.monotonic(), interval=0.1):
        s.alive = s.ready = True
        return
    raise LabError(f"{s.name}: codex not idle with its thread lock before the deadline; "
                   f"screen: {tail(capture(lay, s.tmux_session))}")

