"""The tmux pane listing as plain values, for `relay targets`' plain path (no roster, no dataclasses).

Why apart from `panes.py`: the roster (dataclasses, subprocess, the loopless helpers) costs a
cold listing more CPU than the peer it is measured against spends in all. This module is the one
home of the listing's format and of which servers are searched; `panes.py` builds its `Pane`s and
`TmuxServer`s from them. The tmux client runs through `prefetch.Listing` (posix_spawn, no
subprocess import), with the environment `tmux.tmux_env` gives it. Only reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path  # the paths spelled as panes.py always did (Path joins)

# Printable on purpose: without a UTF-8 locale tmux prints control characters as `_`.
# The two free-text fields come last and the split is bounded, so a `|:|` inside a
# session name cannot shift the fixed fields.
SEP = "|:|"
PANE_FIELDS = ("pane_id", "pane_pid", "window_id", "pane_in_mode", "pane_mode", "pane_dead",
               "alternate_on", "cursor_x", "cursor_y", "pane_current_command", "session_name")
PANE_FORMAT = SEP.join("#{%s}" % f for f in PANE_FIELDS)
TIMEOUT = 5.0  # seconds, as tmux.TMUX_TIMEOUT


def tmux_dir(env: Mapping[str, str]) -> str:
    return str(Path(env.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}")


def server_paths(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(socket path, label) of the servers to search, in order, duplicates dropped (panes.py's doc)."""
    found: list[tuple[str, str]] = []
    name = env.get("RELAY_TMUX_SOCKET")
    if name:
        found.append((name if "/" in name else str(Path(tmux_dir(env)) / name), f"RELAY_TMUX_SOCKET={name}"))
    tmux = env.get("TMUX")
    if tmux:
        found.append((tmux.split(",", 1)[0], "$TMUX"))
    found.append((str(Path(tmux_dir(env)) / "default"), "default"))
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for path, label in found:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append((path, label))
    return out


def pane_rows(text: str) -> list[dict[str, str]]:
    """`list-panes -F PANE_FORMAT` output as one dict of fields per line; malformed lines skipped. Pure."""
    rows: list[dict[str, str]] = []
    for line in text.splitlines():
        parts = line.split(SEP, len(PANE_FIELDS) - 2)
        if len(parts) != len(PANE_FIELDS) - 1:
            continue
        command, _, session = parts[-1].partition(SEP)
        rows.append(dict(zip(PANE_FIELDS, [*parts[:-1], command, session])))
    return rows


def tmux_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment for a tmux client: `env` without $TMUX, with a UTF-8 locale."""
    child = {k: v for k, v in env.items() if k != "TMUX"}
    if not any("UTF-8" in child.get(k, "").upper() for k in ("LC_ALL", "LC_CTYPE", "LANG")):
        child["LC_CTYPE"] = "C.UTF-8"
    return child


def which(name: str, path: str | None) -> str | None:
    """`shutil.which(name, path=path)` for a bare name, without importing shutil."""
    if path is None:
        path = os.environ.get("PATH", os.defpath)
    for d in path.split(os.pathsep) if path else ():
        exe = os.path.join(d, name)
        if os.access(exe, os.X_OK) and not os.path.isdir(exe):
            return exe
    return None


def split_captures(text: str, marker: str) -> dict[str, str]:
    """Split the output of a chained capture (see `capture_panes`) by marker lines. Pure."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith(marker + " "):
            current = out.setdefault(line[len(marker) + 1 :].strip(), [])
            continue
        if current is not None:
            current.append(line)
    return {k: "\n".join(v).rstrip("\n") for k, v in out.items()}


class PlainPane:
    """A live or dead pane as tmux lists it: the attributes of `panes.Pane` a listing reads."""

    __slots__ = ("socket_path", "label", "pane_id", "pane_pid", "current_command", "session_name", "dead")

    def __init__(self, socket_path: str, label: str, f: Mapping[str, str]) -> None:
        self.socket_path, self.label = socket_path, label
        self.pane_id = f["pane_id"]
        self.pane_pid = int(f["pane_pid"])
        int(f["cursor_x"] or 0), int(f["cursor_y"] or 0)  # a line panes.parse_panes refuses is refused here too
        self.current_command, self.session_name = f["pane_current_command"], f["session_name"]
        self.dead = f["pane_dead"] == "1"

    @property
    def key(self) -> tuple[str, str]:
        return self.socket_path, self.pane_id

    def target_fields(self) -> dict[str, str | None]:
        return {"tmux_socket": self.socket_path, "tmux_server": self.label}

    def detail_fields(self) -> dict[str, str | None]:
        return {"tmux_session": self.session_name, "pane_current_command": self.current_command}


def run_tmux(socket_path: str, args: list[str], env: Mapping[str, str]) -> str | None:
    """tmux's stdout for `args` against the server at `socket_path`; None on any failure (as panes.py)."""
    from relay_repl.system.prefetch import Listing

    child = tmux_env(env)
    exe = which("tmux", child.get("PATH"))
    if exe is None:
        return None
    try:
        code, out, _ = Listing([exe, "-S", socket_path, *args], child).result(TIMEOUT)
    except (OSError, TimeoutError):
        return None
    if code != 0:
        return None
    lines = out.decode("utf-8", "replace").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


def list_panes(env: Mapping[str, str]) -> list[PlainPane]:
    """Every pane of every reachable server (a server with no socket file is skipped), as panes.list_panes."""
    if which("tmux", env.get("PATH")) is None:
        return []
    panes: list[PlainPane] = []
    for path, label in server_paths(env):
        if not os.path.exists(path):
            continue
        out = run_tmux(path, ["list-panes", "-a", "-F", PANE_FORMAT], env)
        for f in pane_rows(out or ""):
            try:
                panes.append(PlainPane(path, label, f))
            except ValueError:
                continue
    return panes


def capture_args(pane_ids: list[str], marker: str, history: int = 0) -> list[str]:
    """One tmux command line capturing every pane of one server: `display-message -p MARK #{pane_id}
    ; capture-pane -p -J -t …` chained with `;` (split_captures reads it back); -J joins wrapped lines
    so a long footer stays one line; `history` lines above the screen with -S."""
    args: list[str] = []
    for pane_id in pane_ids:
        if args:
            args.append(";")
        args += ["display-message", "-p", "-t", pane_id, f"{marker} #{{pane_id}}", ";",
                 "capture-pane", "-p", "-J", "-t", pane_id]
        if history:
            args += ["-S", str(-history)]
    return args


def capture_panes(panes: list[PlainPane], env: Mapping[str, str]) -> dict[tuple[str, str], str]:
    """panes.capture_panes (history 0) for plain panes: the visible text of each, keyed by `key`; one
    tmux process per server, one by one when a vanished pane fails the chain."""
    result: dict[tuple[str, str], str] = {}
    if which("tmux", env.get("PATH")) is None or not panes:
        return result
    by_server: dict[str, list[PlainPane]] = {}
    for p in panes:
        by_server.setdefault(p.socket_path, []).append(p)
    for group in by_server.values():
        marker = "relaycap" + os.urandom(6).hex()
        out = run_tmux(group[0].socket_path, capture_args([p.pane_id for p in group], marker), env)
        if out is None and len(group) > 1:
            for p in group:
                result.update(capture_panes([p], env))
            continue
        for pane_id, text in split_captures(out or "", marker).items():
            result[(group[0].socket_path, pane_id)] = text
    return result


class PlainRoster:
    """What `panes.PaneRoster` gives one listing (panes, pane_pid index, process table), read once each."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self._panes: list[PlainPane] | None = None
        self._table: dict | None = None

    def panes(self) -> list[PlainPane]:
        if self._panes is None:
            self._panes = list_panes(self.env)
        return list(self._panes)

    def by_pane_pid(self) -> dict[int, list[PlainPane]]:
        """pane_pid → its live panes (a list: two servers can, in theory, share a pid namespace)."""
        idx: dict[int, list[PlainPane]] = {}
        for p in self.panes():
            if not p.dead:
                idx.setdefault(p.pane_pid, []).append(p)
        return idx

    def capture(self, panes: list[PlainPane]) -> dict[tuple[str, str], str]:
        return capture_panes(panes, self.env)

    def processes(self) -> dict:
        if self._table is None:
            from relay_repl.system.proc import process_table

            self._table = process_table()
        return self._table
