"""Gemini CLI discovery: live `gemini.js` processes, their projects, chat files and panes.

Gemini CLI keeps no registry of running sessions and holds no lock (adapters/gemini-cli.md
"Registry and listing", "Liveness"), so discovery starts from the kernel's process table:

1. A session is a process whose argv runs Gemini CLI's `bundle/gemini.js` and whose parent does
   not (the wrapper; it relaunches itself once as a child that does the work). Same uid only:
   its cwd (the project root) and environment (`GEMINI_CLI_HOME`) are read from /proc, and only
   a process whose Gemini home is this relay's own is listed.
2. Its chat file: the one the pane's footer names (`session` item, 8 hex), else the newest chat
   file of its project started no earlier than the process (GM §3), claimed by one process only.
3. Its pane: the pane whose `#{pane_pid}` is the wrapper or one of its ancestors.
4. Its name (the address rule): the project's short id, or `<short id>-<8 hex>` when several
   live sessions share the project.
State comes from the pane's screen (busy spinner, idle hint, approval box = waiting).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from relay_repl.agents.gemini_cli.chats import Chat, chats, gemini_dir, project_id
from relay_repl.agents.gemini_cli.detail import GeminiDetail
from relay_repl.agents.gemini_cli.own import SCRIPT as SCRIPT, is_gemini as is_gemini, under_gemini
from relay_repl.core.target import Me, Target, TargetState
from relay_repl.system import loopless
from relay_repl.system.panes import Pane, PaneRoster
from relay_repl.system.proc import ProcStat, ancestors, process_table, read_cmdline, read_environ, read_stat

if TYPE_CHECKING:  # annotations only: core/inbound.py loads on first use, off the `relay targets` path
    from relay_repl.core.inbound import PeerIdentity

KIND = "gemini-cli"
PREFIX = "gemini"
BINARY = "gemini"
# Gemini CLI 0.61.0 runs headless, not in its TUI, when CI == "true" or GITHUB_ACTIONS == "true"
# (`isHeadlessMode`, unless GEMINI_CLI_INTEGRATION_TEST == "true"): in a pane it then prints "No input
# provided via stdin" and exits. A lab pane started from a CI job must not inherit them
# (adapters/gemini-cli.md, "Environment"); `relay fidelity` checks it (fidelity.py).
HEADLESS_ENV = ("CI", "GITHUB_ACTIONS")
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
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return None


@dataclass
class Session:
    """One live Gemini CLI process, as discovery reads it."""

    pid: int
    start: str
    argv: list[str]
    cwd: str
    gdir: Path
    project: str | None
    started: float | None
    worker: int | None = None
    pane: Pane | None = None
    screen: str | None = None
    chat: Chat | None = None
    tied_by: str = ""
    notes: list[str] = field(default_factory=list)


def _sessions(table: dict[int, ProcStat], env: Mapping[str, str]) -> list[Session]:
    """Every live Gemini CLI wrapper process of our uid whose Gemini home is ours (blocking: reads /proc).

    Why the home: a session's chats, projects and settings live under its own `.gemini` directory
    (GM §1), so a process started with another `GEMINI_CLI_HOME` is as foreign to this relay as a
    Claude session under another `CLAUDE_CONFIG_DIR`: its deliveries could not be confirmed from our
    chat files. Without this, `relay --lab targets` listed another lab's Gemini session (seen when
    two labs ran on one machine)."""
    uid = os.getuid()
    own = os.path.realpath(gemini_dir(env))
    argvs: dict[int, list[str]] = {}
    for pid, st in table.items():
        if st.comm not in ("node", "gemini") and not st.comm.startswith("node"):
            continue
        argv = read_cmdline(pid)
        if is_gemini(argv):
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
        gdir = gemini_dir(penv if ("HOME" in penv or "GEMINI_CLI_HOME" in penv) else env)
        if os.path.realpath(gdir) != own:
            continue  # another Gemini home: not one of this relay's sessions
        worker = next((p for p, a in argvs.items() if table[p].ppid == pid), None)
        found.append(Session(pid=pid, start=st.start, argv=argv, cwd=cwd, gdir=gdir,
                             project=project_id(gdir, cwd), started=start_epoch(st), worker=worker))
    return sorted(found, key=lambda s: (s.started or 0.0, s.pid))


def _tie_chats(sessions: list[Session], footers: dict[int, str]) -> None:
    """Give each session its chat file: the footer's id first, then by start time (GM §3)."""
    taken: set[Path] = set()
    for s in sessions:
        sid = footers.get(s.pid)
        if sid and s.project:
            chat = next((c for c in chats(s.gdir, s.project) if c.short == sid), None)
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
        files = [c for c in chats(gdir, project) if c.path not in taken]
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


def _names(sessions: list[Session]) -> dict[int, str]:
    """The address rule: the project short id, or `<id>-<8 hex>` when several live sessions share it."""
    count: dict[str, int] = {}
    for s in sessions:
        if s.project:
            count[s.project] = count.get(s.project, 0) + 1  # across homes too: a name must be unique
    names: dict[int, str] = {}
    for s in sessions:
        base = s.project or os.path.basename(s.cwd.rstrip("/")) or str(s.pid)
        if count.get(base, 0) > 1 or s.project is None:
            names[s.pid] = f"{base}-{s.chat.short}" if s.chat else f"{base}-{s.pid}"
        else:
            names[s.pid] = base
    return names


def _state(screen: str | None) -> TargetState:
    if not screen:
        return "unknown"
    from relay_repl.agents.gemini_cli import screen as cls
    from relay_repl.agents.screens.model import Snapshot

    reading = cls.classify(Snapshot(lines=screen.split("\n"), esc_lines=None))
    if "dialog" in reading.blockers:
        return "waiting"
    return reading.kind if reading.kind in ("idle", "busy") else "unknown"


class GeminiProvider:
    """Gemini CLI sessions of this uid, found through /proc (no registry exists)."""

    kind = KIND

    def __init__(self, env: Mapping[str, str] | None = None, panes: PaneRoster | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.panes = panes or PaneRoster(env=self.env)

    def __repr__(self) -> str:
        return "<GeminiProvider /proc>"

    async def sessions(self) -> list[Session]:
        table = await self.panes.processes()
        found = await loopless.to_thread(_sessions, table, self.env)
        if not found:
            return []
        panes = [p for p in await self.panes.panes() if not p.dead]
        by_pid = {p.pane_pid: p for p in panes}
        parents = {pid: st.ppid for pid, st in table.items()}
        for s in found:
            s.pane = next((by_pid[p] for p in ancestors(s.pid, parents) if p in by_pid), None)
        shots = await self.panes.capture([s.pane for s in found if s.pane is not None])
        footers: dict[int, str] = {}
        from relay_repl.agents.gemini_cli.screen import footer_session
        from relay_repl.agents.screens.model import Snapshot

        for s in found:
            if s.pane is not None:
                s.screen = shots.get(s.pane.key)
                if s.screen:
                    sid = footer_session(Snapshot(lines=s.screen.split("\n")))
                    if sid:
                        footers[s.pid] = sid
        await loopless.to_thread(_tie_chats, found, footers)
        return found

    async def discover(self) -> list[Target]:
        from relay_repl.agents.versions import version_status

        found = await self.sessions()
        names = _names(found)
        targets: list[Target] = []
        for s in found:
            version = package_version(s.argv)
            chat = str(s.chat.path) if s.chat else None
            detail = GeminiDetail(cwd=s.cwd, project=s.project, gemini_dir=str(s.gdir),
                                  session_id=s.chat.session_id if s.chat else None, worker_pid=s.worker,
                                  tied_by=s.tied_by or None, notes=tuple(s.notes),
                                  **(s.pane.detail_fields() if s.pane is not None else {}))
            how = f"live gemini.js process {s.pid} (cwd {s.cwd})"
            how += f"; chat: {s.tied_by}" if s.chat else "; no chat file tied to it"
            targets.append(Target(
                kind=KIND, prefix=PREFIX, name=names[s.pid],
                address=s.chat.session_id if s.chat else f"pid:{s.pid}", pid=s.pid, live=True,
                state=_state(s.screen), pane=s.pane.pane_id if s.pane else None,
                transports=("tmux",) if s.pane is not None and s.chat is not None else (),
                identified_by=how, detail=detail, client_version=version, evidence_file=chat,
                proc_start=s.start, **(s.pane.target_fields() if s.pane is not None else {}),
                client_status=version_status(KIND, version)))
        return targets

    # -- origin verdicts (agents/origin.py) ----------------------------------------------------

    def _live(self) -> tuple[list[Session], dict[int, str]]:
        """Live sessions with their chats (by start time) and names (blocking)."""
        sessions = _sessions(process_table(), self.env)
        _tie_chats(sessions, {})
        return sessions, _names(sessions)

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        """The Gemini CLI session process `pid` is (its wrapper or relaunched worker), or None.

        The process is the kernel's fact; which chat it writes is read as discovery reads it:
        Gemini records no kernel provenance, so the claimable strings are its name, its session
        id (and 8-hex prefix) and its pid."""
        if read_stat(pid) is None or not is_gemini(read_cmdline(pid)):
            return None
        sessions, names = self._live()
        s = next((x for x in sessions if pid in (x.pid, x.worker)), None)
        if s is None:
            return None
        name = names[s.pid]
        claim = {name, str(s.pid)}
        if s.chat is not None:
            claim |= {s.chat.session_id, s.chat.short}
        from relay_repl.core.inbound import PeerIdentity

        return PeerIdentity(kind=KIND, spec=f"{PREFIX}:{name}", pid=s.pid, claimable=frozenset(claim),
                            evidence=(f"pid {pid} is gemini.js session process {s.pid} (cwd {s.cwd}"
                                      + (f", chat {s.chat.path.name}" if s.chat else "") + ")"))

    def claimed_session(self, address: str) -> str | None:
        """The live session a claimed address names (its name or session id), or None."""
        sessions, names = self._live()
        for s in sessions:
            if address in {names[s.pid], *((s.chat.session_id, s.chat.short) if s.chat else ())}:
                return f"{PREFIX}:{names[s.pid]}"
        return None

    def own_address(self) -> Me | None:
        """This process's address when it runs under a Gemini CLI session (a `relay reply` its shell tool
        started), else None. Gemini CLI gives its tools no variable naming the session, so the session
        is found the way the inbox will judge the answer: our own ancestry, from /proc."""
        chain = ancestors(os.getpid())
        if not under_gemini(chain):
            return None
        sessions, names = self._live()
        for p in chain:
            s = next((x for x in sessions if p in (x.pid, x.worker)), None)
            if s is not None:
                return Me(role="agent", agent=KIND, address=names[s.pid])
        return None
