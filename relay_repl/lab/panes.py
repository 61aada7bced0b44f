"""The lab's private tmux server: one runner for its commands, its panes, their captures and the
product's own reading of a pane (the screen classifier, never a heuristic of the lab's own).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from relay_repl.agents.kind import screen_tail
from relay_repl.agents.screens.model import ScreenReading
from relay_repl.core.errors import LabError, PaneGone, TmuxError
from relay_repl.system.tmux import TmuxResult
from relay_repl.system.tmux import run as run_tmux

from relay_repl.lab.labenv import lab_env
from relay_repl.lab.layout import PANE_HEIGHT, PANE_WIDTH, Layout, tmux_socket_path
from relay_repl.lab.state import LabSession


def tmux(lay: Layout, *args: str, env: dict[str, str] | None = None, check: bool = True,
         prefix: list[str] | None = None, timeout: float = 15.0) -> TmuxResult:
    """A tmux command on the lab's private server, through the one runner (`system.tmux`).

    The client's PATH becomes the new pane's PATH (tmux 3.3), so the tmux client always
    runs with the lab environment; `-f /dev/null`: nothing of the operator's tmux config."""
    try:
        res = run_tmux(("-L", lay.tmux_socket), *args, env=env or lab_env(lay), timeout=timeout,
                       config="/dev/null", prefix=prefix or ())
    except TmuxError as exc:
        raise LabError(f"tmux {args[0]} failed: {exc}") from exc
    if check and not res.ok:
        raise LabError(f"tmux {' '.join(args[:1])} failed: {res.error}")
    return res


def tmux_alive(lay: Layout) -> bool:
    if not tmux_socket_path(lay.tmux_socket).exists():
        return False
    return tmux(lay, "list-sessions", check=False).returncode == 0


def list_panes(lay: Layout) -> dict[str, dict[str, str]]:
    """tmux session name -> {pane_id, pane_pid, dead}."""
    fmt = "#{session_name}\t#{pane_id}\t#{pane_pid}\t#{pane_dead}"
    proc = tmux(lay, "list-panes", "-a", "-F", fmt, check=False)
    out: dict[str, dict[str, str]] = {}
    if proc.returncode != 0:
        return out
    for line in proc.stdout:
        parts = line.split("\t")
        if len(parts) == 4:
            out.setdefault(parts[0], {"pane_id": parts[1], "pane_pid": parts[2], "dead": parts[3]})
    return out


def capture(lay: Layout, target: str) -> str:
    proc = tmux(lay, "capture-pane", "-p", "-t", target, check=False)
    return proc.text if proc.ok else ""


tail = screen_tail
"""The last lines of a screen, joined on one line (agents.kind.screen_tail: kinds quote it too)."""


def new_session(lay: Layout, name: str, cwd: Path, command: list[str], extra_env: dict[str, str],
                 prefix: list[str] | None = None) -> None:
    args = ["new-session", "-d", "-s", name, "-x", str(PANE_WIDTH), "-y", str(PANE_HEIGHT), "-c", str(cwd)]
    for k, v in extra_env.items():
        args += ["-e", f"{k}={v}"]
    tmux(lay, *args, "--", *command, prefix=prefix)


def type_line(lay: Layout, target: str, text: str) -> None:
    """Type `text` literally, then Enter in a separate call (Codex drops a same-call Enter)."""
    tmux(lay, "send-keys", "-t", target, "-l", text)


def pane_info(lay: Layout, s: LabSession) -> dict[str, str] | None:
    return list_panes(lay).get(s.tmux_session)


def fail_dead(lay: Layout, s: LabSession, info: dict[str, str] | None) -> None:
    if info is None:
        raise LabError(f"{s.name}: its tmux session vanished (see {lay.logs})")
    if info["dead"] == "1":
        raise LabError(f"{s.name}: the {s.kind} process exited: {tail(capture(lay, s.tmux_session))}")


def read_pane(socket_path: str | Path, target: str, kind: str, env: Mapping[str, str] | None = None,
              ) -> ScreenReading | None:
    """The product's reading of a pane: the same one-call snapshot the tmux transport takes
    (plain and `-e` rows, cursor, pane modes) through the kind's own screen classifier.

    Why not a heuristic of the lab's own: the lab declared a Codex session ready by a
    `›` row and the absence of `esc to interrupt`, beside the real classifier that decides
    whether relay may type; two readings of one screen can disagree. None when the pane is
    gone or the kind has no classifier (then nothing counts as ready)."""
    from relay_repl.agents.screens import for_kind
    from relay_repl.transports.tmux import PaneIO, PaneRef

    classifier = for_kind(kind)
    if classifier is None:
        return None
    try:
        snap = PaneIO(env).snapshot(PaneRef(socket_path=str(socket_path), pane_id=target, server_label="lab"))
    except PaneGone:
        return None
    return classifier.classify(snap)


def read_screen(lay: Layout, kind: str, target: str) -> ScreenReading | None:
    """`read_pane` on a pane (or tmux session) of this lab's server."""
    return read_pane(tmux_socket_path(lay.tmux_socket), target, kind, env=lab_env(lay))


def screen_idle(reading: ScreenReading | None) -> bool:
    """Idle by the classifier, and not a TUI waiting for a daemon that is gone (`Reconnecting`)."""
    return reading is not None and reading.kind == "idle" and "reconnecting" not in reading.blockers


def screen_busy(reading: ScreenReading | None) -> bool:
    """Busy by the classifier, or reconnecting to a daemon (a turn cannot start then either)."""
    return reading is not None and (reading.kind == "busy" or "reconnecting" in reading.blockers)
