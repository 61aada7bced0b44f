"""Gemini CLI sessions from the process table, their chat files, panes, names and rows: the steps
discovery runs (provider.GeminiProvider, adapters/gemini-cli.md "Registry and listing").

1. A session is a process whose argv runs Gemini CLI's `bundle/gemini.js` and whose parent does
   not (the wrapper; it relaunches itself once as a child that does the work). Same uid only:
   its cwd (the project root) and environment (`GEMINI_CLI_HOME`) are read from /proc, and only
   a process whose Gemini home is this relay's own is listed.
2. Its chat file: the one the pane's footer names (`session` item, 8 hex), else the newest chat
   file of its project started no earlier than the process (GM §3), claimed by one process only.
3. Its pane: the pane whose `#{pane_pid}` is the wrapper or one of its ancestors.
4. Its name (the address rule): the project's short id, or `<short id>-<8 hex>` when several
   live sessions share the project.
State comes from the pane's screen (busy spinner, idle hint, approval box = waiting), read by the
kind's one classifier (screen.py).

Why a module apart from provider.py: `relay targets` runs these very steps on its standard-library
path (plain_listing.py, issue 40), which loads this module by file; so it imports only the standard
library, system/ and, through `prefetch.sibling`, its siblings (chats, own, the classifier) the
way it was itself loaded, never the agents package (pydantic) by name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.system.prefetch import sibling
from relay_repl.system.proc import ProcStat, ancestors, read_cmdline, read_environ

if TYPE_CHECKING:
    from types import ModuleType

    from relay_repl.agents.gemini_cli import own as _own
    from relay_repl.agents.gemini_cli.chats import Chat
else:
    _own = sibling(__name__, "relay_repl.agents.gemini_cli.own")


def _chats() -> ModuleType:
    """chats.py, on first use: a listing with no Gemini process never reads a chat file (nor imports its reader)."""
    return sibling(__name__, "relay_repl.agents.gemini_cli.chats")

KIND = "gemini-cli"
PREFIX = "gemini"
TERMINALS = ("/dev/pts/", "/dev/tty")  # an interactive session reads its terminal (GM §1: headless otherwise)
START_SLACK = 2.0  # seconds a chat header's startTime may precede the process start (clock rounding)


def package_version(argv: list[str]) -> str | None:
    """The version in the package.json beside the running bundle (no subprocess)."""
    for arg in argv[1:4]:
        if arg.startswith("-"):
            continue
        script = Path(os.path.realpath(arg))
        for pkg in (script.parent.parent / "package.json", script.parent / "package.json"):
            try:
                data = json.loads(pkg.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("name") == "@google/gemini-cli":
                return str(data.get("version")) or None
    return None


def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def start_epoch(st: ProcStat) -> float | None:
    """When a process started, in seconds since the epoch (/proc/stat btime + start ticks)."""
    boot = _boot_time()
    try:
        return None if boot is None else boot + int(st.start) / os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        return None


def _iso_epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    from datetime import UTC, datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return None


class Session:
    """One live Gemini CLI process, as discovery reads it."""

    __slots__ = ("pid", "start", "argv", "cwd", "gdir", "project", "started", "worker", "pane", "screen", "chat",
                 "tied_by", "notes")

    def __init__(self, pid: int, start: str, argv: list[str], cwd: str, gdir: Path, project: str | None,
                 started: float | None, worker: int | None = None, pane: Any = None, screen: str | None = None,
                 chat: Chat | None = None, tied_by: str = "", notes: list[str] | None = None) -> None:
        self.pid, self.start, self.argv, self.cwd, self.gdir = pid, start, argv, cwd, gdir
        self.project, self.started, self.worker, self.pane, self.screen = project, started, worker, pane, screen
        self.chat, self.tied_by, self.notes = chat, tied_by, [] if notes is None else notes

    def __repr__(self) -> str:
        return f"<Session pid={self.pid} cwd={self.cwd!r}>"


def find_sessions(table: Mapping[int, ProcStat], env: Mapping[str, str]) -> list[Session]:
    """Every live Gemini CLI wrapper process of our uid whose Gemini home is ours (blocking: reads /proc).

    Why the home: a session's chats, projects and settings live under its own `.gemini` directory
    (GM §1), so a process started with another `GEMINI_CLI_HOME` is as foreign to this relay as a
    Claude session under another `CLAUDE_CONFIG_DIR`: its deliveries could not be confirmed from our
    chat files. Without this, `relay --lab targets` listed another lab's Gemini session (seen when
    two labs ran on one machine)."""
    uid = os.getuid()
    own: str | None = None
    argvs: dict[int, list[str]] = {}
    for pid, st in table.items():
        if st.comm not in ("node", "gemini") and not st.comm.startswith("node"):
            continue
        argv = read_cmdline(pid)
        if _own.is_gemini(argv):
            argvs[pid] = argv or []
    found: list[Session] = []
    for pid, argv in argvs.items():
        st = table[pid]
        if st.ppid in argvs:
            continue  # the relaunched worker: its wrapper is the session
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            cwd = os.readlink(f"/proc/{pid}/cwd")
            stdin = os.readlink(f"/proc/{pid}/fd/0")
        except OSError:
            continue
        if not stdin.startswith(TERMINALS):
            continue  # without a terminal Gemini CLI is headless (`gemini --version`, `-p`): not a session
        penv = read_environ(pid) or {}
        chats = _chats()
        own = os.path.realpath(chats.gemini_dir(env)) if own is None else own
        gdir = chats.gemini_dir(penv if ("HOME" in penv or "GEMINI_CLI_HOME" in penv) else env)
        if os.path.realpath(gdir) != own:
            continue  # another Gemini home: not one of this relay's sessions
        worker = next((p for p, a in argvs.items() if table[p].ppid == pid), None)
        found.append(Session(pid=pid, start=st.start, argv=argv, cwd=cwd, gdir=gdir,
                             project=chats.project_id(gdir, cwd), started=start_epoch(st), worker=worker))
    return sorted(found, key=lambda s: (s.started or 0.0, s.pid))


def place_panes(found: list[Session], panes: Iterable[Any], table: Mapping[int, ProcStat]) -> list[Any]:
    """Give each session the live pane whose pane_pid is it or an ancestor; the panes to capture."""
    by_pid = {p.pane_pid: p for p in panes if not p.dead}
    parents = {pid: st.ppid for pid, st in table.items()}
    for s in found:
        s.pane = next((by_pid[p] for p in ancestors(s.pid, parents) if p in by_pid), None)
    return [s.pane for s in found if s.pane is not None]


def read_screens(found: list[Session], shots: Mapping[Any, str]) -> dict[int, str]:
    """Each session's screen from `shots` (by pane key); the session ids their footers show, by pid."""
    screen = sibling(__name__, "relay_repl.agents.gemini_cli.screen")
    model = sibling(__name__, "relay_repl.agents.screens.model")
    footers: dict[int, str] = {}
    for s in found:
        if s.pane is not None:
            s.screen = shots.get(s.pane.key)
            if s.screen:
                sid = screen.footer_session(model.Snapshot(lines=s.screen.split("\n")))
                if sid:
                    footers[s.pid] = sid
    return footers


def tie_chats(sessions: list[Session], footers: Mapping[int, str]) -> None:
    """Give each session its chat file: the footer's id first, then by start time (GM §3)."""
    taken: set[Path] = set()
    for s in sessions:
        sid = footers.get(s.pid)
        if sid and s.project:
            chat = next((c for c in _chats().chats(s.gdir, s.project) if c.short == sid), None)
            if chat is not None:
                s.chat, s.tied_by = chat, f"the pane's footer shows session {sid}"
                taken.add(chat.path)
            else:
                s.notes.append(f"footer shows session {sid}, but no chat file of project {s.project} has it")
    by_project: dict[tuple[Path, str], list[Session]] = {}
    for s in sessions:
        if s.project:
            by_project.setdefault((s.gdir, s.project), []).append(s)
    for (gdir, project), group in by_project.items():
        files = [c for c in _chats().chats(gdir, project) if c.path not in taken]
        for i, s in enumerate(group):
            if s.chat is not None:
                continue
            lo = (s.started or 0.0) - START_SLACK
            nxt = next((g.started for g in group[i + 1:] if g.started is not None), None)
            hi = (nxt - START_SLACK) if nxt is not None else float("inf")
            cands = [c for c in files if lo <= (_iso_epoch(c.start_time) or 0.0) < hi]
            if cands:
                s.chat = cands[-1]
                s.tied_by = (f"the newest chat file of project {project} started after pid {s.pid} "
                             f"({len(cands)} candidate(s))")
                taken.add(s.chat.path)
                files = [c for c in files if c.path not in taken]
            else:
                s.notes.append(f"no chat file of project {project} started after pid {s.pid}")


def names(sessions: list[Session]) -> dict[int, str]:
    """The address rule: the project short id, or `<id>-<8 hex>` when several live sessions share it."""
    count: dict[str, int] = {}
    for s in sessions:
        if s.project:
            count[s.project] = count.get(s.project, 0) + 1  # across homes too: a name must be unique
    out: dict[int, str] = {}
    for s in sessions:
        base = s.project or os.path.basename(s.cwd.rstrip("/")) or str(s.pid)
        if count.get(base, 0) > 1 or s.project is None:
            out[s.pid] = f"{base}-{s.chat.short}" if s.chat else f"{base}-{s.pid}"
        else:
            out[s.pid] = base
    return out


def state(screen_text: str | None) -> str:
    """The session's state by the classifier: waiting (a dialog), idle, busy, else unknown."""
    if not screen_text:
        return "unknown"
    screen = sibling(__name__, "relay_repl.agents.gemini_cli.screen")
    model = sibling(__name__, "relay_repl.agents.screens.model")
    reading = screen.classify(model.Snapshot(lines=screen_text.split("\n"), esc_lines=None))
    if "dialog" in reading.blockers:
        return "waiting"
    return reading.kind if reading.kind in ("idle", "busy") else "unknown"


def target_fields(found: list[Session], status_word: Callable[[str | None], str]
                  ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(Target's fields but `detail`, GeminiDetail's fields) of each session, as discovery lists them."""
    named = names(found)
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for s in found:
        version = package_version(s.argv)
        detail: dict[str, Any] = {"cwd": s.cwd, "project": s.project, "gemini_dir": str(s.gdir),
                                  "session_id": s.chat.session_id if s.chat else None, "worker_pid": s.worker,
                                  "tied_by": s.tied_by or None, "notes": tuple(s.notes),
                                  **(s.pane.detail_fields() if s.pane is not None else {})}
        how = f"live gemini.js process {s.pid} (cwd {s.cwd})"
        how += f"; chat: {s.tied_by}" if s.chat else "; no chat file tied to it"
        out.append(({
            "kind": KIND, "prefix": PREFIX, "name": named[s.pid],
            "address": s.chat.session_id if s.chat else f"pid:{s.pid}", "pid": s.pid, "live": True,
            "state": state(s.screen), "pane": s.pane.pane_id if s.pane else None,
            "transports": ("tmux",) if s.pane is not None and s.chat is not None else (),
            "identified_by": how, "client_version": version, "evidence_file": str(s.chat.path) if s.chat else None,
            "proc_start": s.start, **(s.pane.target_fields() if s.pane is not None else {}),
            "client_status": status_word(version)}, detail))
    return out
