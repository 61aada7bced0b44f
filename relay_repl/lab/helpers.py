"""Test helpers that put lab sessions into given states (sync, on the one tmux runner).

These type into lab panes on purpose: they stage the situations relay must cope with
(a busy session, an unsent draft, a pane in copy mode, a crashed process, a renamed
thread). They are for the lab only; relay itself never types outside its transports.

Each helper takes a session as a `LabSession` or a lab session name and works on the
running lab (`launcher.status()`). All are blocking; from async tests call them via
`anyio.to_thread.run_sync`.
"""

from __future__ import annotations

import os
import re
import signal
import time

from relay_repl.agents.screens.model import ScreenReading
from relay_repl.core.errors import LabError, TmuxError
from relay_repl.system.polling import poll_until_sync
from relay_repl.system.tmux import TmuxResult
from relay_repl.system.tmux import run as run_tmux

import relay_repl.lab.launcher as launcher
import relay_repl.lab.kind_sessions as kind_sessions
from relay_repl.lab.panes import read_pane, screen_busy, screen_idle, tail
import relay_repl.lab.procs as procs
from relay_repl.lab.layout import Layout
from relay_repl.lab.state import LabSession, LabState, save

SessionRef = LabSession | str


def _resolve(session: SessionRef) -> tuple[LabState, LabSession]:
    state = launcher.status()
    if state is None:
        raise LabError("no lab running: start one with `relay lab up`")
    key = session.tmux_session if isinstance(session, LabSession) else session
    try:
        return state, state.session(key)
    except KeyError:
        raise LabError(f"no lab session {key!r}") from None


class LabPane:
    """One pane of the lab's private tmux server, driven through the one tmux runner
    (`system.tmux`). The few methods tests use read like libtmux's Pane."""

    def __init__(self, socket_path: str, pane_id: str) -> None:
        self.socket_path = socket_path
        self.pane_id = pane_id

    def __repr__(self) -> str:
        return f"<LabPane {self.pane_id}@{self.socket_path}>"

    def cmd(self, *args: str) -> TmuxResult:
        """`tmux <args[0]> -t <pane> <args[1:]>` on the lab server."""
        try:
            return run_tmux(("-S", self.socket_path), args[0], "-t", self.pane_id, *args[1:], timeout=15.0)
        except TmuxError as exc:
            raise LabError(f"{self}: {exc}") from exc

    def capture_pane(self) -> list[str]:
        return self.cmd("capture-pane", "-p").stdout

    def send_keys(self, keys: str, enter: bool = True, literal: bool = False) -> None:
        self.cmd("send-keys", *(["-l"] if literal else []), keys)
        if enter:
            self.cmd("send-keys", "Enter")


def pane(session: SessionRef) -> LabPane:
    state, s = _resolve(session)
    if not s.pane_id:
        raise LabError(f"{s.name}: no pane recorded")
    p = LabPane(state.tmux_socket_path, s.pane_id)
    if p.cmd("display-message", "-p", "#{pane_id}").stdout != [s.pane_id]:
        raise LabError(f"{s.name}: pane {s.pane_id} not found")
    return p


def capture(session: SessionRef) -> str:
    return "\n".join(pane(session).capture_pane())


def _pane_fmt(p: LabPane, fmt: str) -> str:
    out = p.cmd("display-message", "-p", fmt).stdout
    return out[0] if out else ""


def _reading(s: LabSession, state: LabState | None = None) -> ScreenReading | None:
    """The product's classifier on the session's pane (what the tmux transport would read)."""
    state = state or _resolve(s)[0]
    return read_pane(state.tmux_socket_path, s.pane_id or s.tmux_session, s.kind)


def own_status(s: LabSession, state: LabState) -> str | None:
    """What the session's own record says it is doing (its kind's `LabDriver.status`), or None when its
    kind keeps no such record (then its screen, read by the product's classifier, tells)."""
    lay = Layout.at(state.lab_dir)
    ctx = kind_sessions.context(lay, state, launcher.bin_dir(), (), {}, {})
    return kind_sessions.own_kind(s.kind).status(ctx, kind_sessions.record(s))


def is_idle(session: SessionRef) -> bool:
    state, s = _resolve(session)
    own = own_status(s, state)
    if own is not None:
        return own == "idle"
    return screen_idle(_reading(s, state))


def is_busy(session: SessionRef) -> bool:
    state, s = _resolve(session)
    own = own_status(s, state)
    if own is not None:
        return own in ("busy", "shell")
    return screen_busy(_reading(s, state))


def wait_idle(session: SessionRef, timeout: float = 60.0) -> None:
    if poll_until_sync(lambda: is_idle(session) or None, timeout=timeout, interval=0.1):
        return
    raise LabError(f"{session if isinstance(session, str) else session.name}: not idle after {timeout:g}s")


def _composer_text(s: LabSession) -> str | None:
    """The composer's text as the product's classifier for the session's kind reads it."""
    reading = _reading(s)
    return reading.composer_text if reading else None


def _type(p: LabPane, text: str) -> None:
    p.send_keys(text, enter=False, literal=True)


def _enter(p: LabPane) -> None:
    time.sleep(0.1)  # Codex drops an Enter that arrives in the same burst as the text
    p.send_keys("Enter", enter=False)


def _wait_composer_shows(s: LabSession, text: str, timeout: float) -> None:
    """Until the composer's first row shows the start of `text`: the client has taken the
    typed bytes in (Codex flushes its paste burst only then). An Enter sent before that
    (a fixed pause is not enough on a loaded machine) lands inside the burst and becomes
    a newline, so the turn never starts."""
    want = text.strip()[:40]
    if not poll_until_sync(lambda: True if want and want in (_composer_text(s) or "") else None,
                           timeout=timeout, interval=0.05):
        raise LabError(f"{s.name}: typed text not visible in the composer after {timeout:g}s; "
                       f"screen: {tail(capture(s))}")


def type_text(session: SessionRef, text: str, timeout: float = 15.0) -> None:
    """Type `text` into the session's idle, empty composer and return once it shows there."""
    _state, s = _resolve(session)
    p = pane(s)
    _require_idle_empty(s, p)
    _type(p, text)
    _wait_composer_shows(s, text, timeout)


def submit(session: SessionRef, text: str, timeout: float = 15.0) -> None:
    """Type `text` into the session's idle composer and press Enter once it shows there
    (the way an operator does; the lab's tests stage turns with it)."""
    type_text(session, text, timeout)
    press_enter(session)


def press_enter(session: SessionRef) -> None:
    """Enter, in its own tmux call, after the gap Codex needs to tell it from a paste."""
    _enter(pane(session))


def _require_idle_empty(s: LabSession, p: LabPane, timeout: float = 10.0) -> None:
    def idle_empty() -> bool | None:
        if _pane_fmt(p, "#{pane_in_mode}") == "1":
            raise LabError(f"{s.name}: pane is in copy mode")
        if not is_idle(s):
            return None
        reading = _reading(s)  # the kind's own classifier says where its composer is and whether it is empty
        return True if reading is not None and reading.composer == "empty" and not reading.blockers else None

    if not poll_until_sync(idle_empty, timeout=timeout, interval=0.1):
        raise LabError(f"{s.name}: not idle with an empty composer")


def make_busy(session: SessionRef, seconds: float = 30.0, timeout: float = 15.0) -> None:
    """Start a turn the stub holds for `seconds` (types `SLOW<n> ...` into the idle pane)."""
    _state, s = _resolve(session)
    n = int(seconds) if float(seconds).is_integer() else seconds
    submit(s, f"SLOW{n} lab helper keeps {s.name} busy for {n}s", timeout)
    if poll_until_sync(lambda: is_busy(s) or None, timeout=timeout, interval=0.05):
        return
    raise LabError(f"{s.name}: did not turn busy within {timeout:g}s; screen: {tail(capture(s))}")


def end_busy(session: SessionRef, timeout: float = 60.0) -> None:
    """End the session's held turn now (the stub sends its reply at once) and wait until it is
    idle: a test whose busy turn outlasted what it needed does not sit out the rest of it."""
    from relay_repl.lab.stubs.client import SyncStubClient

    state, s = _resolve(session)
    SyncStubClient(state.stub.control).release(s.name)
    wait_idle(s, timeout)


def put_draft(session: SessionRef, text: str, timeout: float = 5.0) -> None:
    """Leave `text` typed but unsent in the idle composer."""
    type_text(session, text, timeout)


def copy_mode(session: SessionRef) -> None:
    """Put the session's pane into tmux copy mode."""
    p = pane(session)
    p.cmd("copy-mode")
    if _pane_fmt(p, "#{pane_in_mode}") != "1":
        raise LabError("pane did not enter copy mode")


def kill9(session: SessionRef, timeout: float = 5.0) -> int:
    """SIGKILL the session's client process (Claude: claude pid; Codex: the TUI).

    Claude leaves its registry record, key file and socket behind (stale, as after a
    crash); the Codex daemon keeps hosting the thread. Returns the pid killed.
    """
    _state, s = _resolve(session)
    if not s.pid or not procs.is_alive(s.pid, s.proc_start):
        raise LabError(f"{s.name}: process {s.pid} is not running")
    os.kill(s.pid, signal.SIGKILL)
    if procs.wait_gone([s.pid], timeout):
        raise LabError(f"{s.name}: pid {s.pid} survived SIGKILL")
    return s.pid


def rename_session(session: SessionRef, new_name: str, timeout: float = 15.0) -> str:
    """Rename a session from inside its own client (the line its kind's lab driver names,
    `LabDriver.rename_line`); return its session id. Only a kind whose client can rename its session has one."""
    state, s = _resolve(session)
    cmd = kind_sessions.own_kind(s.kind).rename_line(new_name)
    if cmd is None or not s.session_id:
        raise LabError(f"{s.name}: its kind cannot rename the session from inside")
    if not re.fullmatch(r"[^\s/][^\n]*", new_name):
        raise LabError(f"bad session name {new_name!r}")
    p = pane(s)
    _require_idle_empty(s, p)
    lay = Layout.at(state.lab_dir)
    _type(p, cmd)
    deadline = time.monotonic() + timeout
    poll_until_sync(lambda: True if _composer_text(s) == cmd else None, timeout=timeout, interval=0.05)
    _enter(p)
    if poll_until_sync(lambda: True if launcher.session_name_now(state, s) == new_name else None,
                       timeout=deadline - time.monotonic(), interval=0.05):
        s.name = new_name
        save(state, lay.state_file)
        return s.session_id
    raise LabError(f"{s.name}: rename to {new_name!r} not recorded by its client before the deadline")
