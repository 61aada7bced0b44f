"""Codex discovery: threads under one CODEX_HOME, their locks, names, status, goals and panes.

Why this shape (codex.md §0, §2, §4, §5; seed §2):
- All state lives under `CODEX_HOME`, resolved once: a non-default home makes live
  threads look missing, so the provider is bound to one home for its lifetime.
- A thread is *live* when its `thread-writer-locks/<uuid>.lock` is flocked. The holder
  pid comes from /proc/locks by inode — one read for all locks, no `fuser` per file.
  The holder is normally the shared app-server daemon (same pid for every thread);
  with `--no-daemon` it is the TUI, during `codex exec` the exec process.
- The lock proves "loaded", not "idle", so live status comes from the daemon's control
  socket (JSON-RPC in WebSocket frames over a Unix socket): one connection per
  refresh, all `thread/read` requests pipelined. Without a daemon the state is unknown.
- A thread with an active goal auto-resumes and is never idle (goals_1.sqlite).
- No API says which TUI shows which thread, so a pane is rostered only by evidence that
  needs no typing: the lock holder is a `--no-daemon` TUI in the pane, the pane's captured
  footer names the thread (unique), or the TUI was started as `codex resume <uuid>`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from relay_repl.store.sqlite_read import connect_read_only

from pydantic import BaseModel, ConfigDict

from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.codex.evidence import pending_calls, pending_send_calls, pending_status_calls, reply_calls
from relay_repl.agents.codex.rollout import rollout_path, scan_rollouts
from relay_repl.agents.codex.outside import read_daemon_pid as read_daemon_pid  # its one home: the cheap rule reads it too
from relay_repl.core.errors import DaemonError
from relay_repl.core.target import Me, Target
from relay_repl.agents.adapter import AdapterSpec, load_adapter
from relay_repl.agents.versions import binary_version, version_status
from relay_repl.system import loopless
from relay_repl.system.panes import Pane, PaneRoster
from relay_repl.system.proc import (
    ProcStat,
    ancestors,
    children_map,
    descendants,
    file_key,
    flocked_files,
    fuser_holders,
    lock_holders,
    pid_alive,
    proc_start,
    read_cmdline,
    read_environ,
    read_proc_locks,
)

if TYPE_CHECKING:  # annotations only: plan/inbound load on first use, off the `relay targets` path
    from relay_repl.core.inbound import PeerIdentity, ToolCall
    from relay_repl.core.plan import ReplyContext, ReplyRoute

KIND = "codex"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HELPER_SOURCES = {"thread_title"}


# -- registry readers (pure-ish: files only) -------------------------------------------------


def read_session_index(path: Path) -> dict[str, dict[str, Any]]:
    """`session_index.jsonl`: id → its LAST line (the current name). Bad lines are skipped."""
    from relay_repl.core.errors import FileProblem
    from relay_repl.store.loader import read_bytes

    out: dict[str, dict[str, Any]] = {}
    try:  # the one loader: a FIFO or a directory there is refused (relay doctor names it), never a hang
        raw = read_bytes(path, "move it aside", missing_ok=True, max_bytes=256 * 1024 * 1024)
    except FileProblem:
        return out
    if raw is None:
        return out
    text = raw.decode("utf-8", errors="replace")
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and isinstance(d.get("id"), str):
            out[d["id"]] = d
    return out


def _ro_connect(path: Path) -> sqlite3.Connection:
    """Read-only SQLite connection that leaves no -wal/-shm behind (store.sqlite_read)."""
    return connect_read_only(path, timeout=1.0)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


THREAD_COLUMNS = ("id", "name", "title", "rollout_path", "source", "thread_source", "cwd",
                  "archived", "updated_at", "cli_version", "model", "preview")


def read_threads(path: Path, ids: Sequence[str], recent: int) -> tuple[dict[str, dict[str, Any]], str | None]:
    """`state_5.sqlite` threads rows: every row in `ids`, plus the `recent` most recent
    unarchived ones. Columns are introspected (the schema drifts). (rows, error)."""
    if not path.is_file():
        return {}, None
    rows: dict[str, dict[str, Any]] = {}
    try:
        con = _ro_connect(path)
        try:
            cols = _columns(con, "threads")
            if "id" not in cols:
                return {}, "state_5.sqlite has no threads table"
            sel = [c for c in THREAD_COLUMNS if c in cols]
            q = f"SELECT {', '.join(sel)} FROM threads"
            results: list[tuple[Any, ...]] = []
            for i in range(0, len(ids), 500):
                chunk = list(ids[i : i + 500])
                results += con.execute(f"{q} WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
            if recent > 0:
                where = " WHERE archived = 0" if "archived" in cols else ""
                order = " ORDER BY updated_at DESC" if "updated_at" in cols else ""
                results += con.execute(f"{q}{where}{order} LIMIT ?", (recent,)).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return rows, f"state_5.sqlite unreadable ({exc})"
    for r in results:
        d = dict(zip(sel, r))
        rows[d["id"]] = d
    return rows, None


def read_goals(path: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """`goals_1.sqlite` thread_goals rows by thread id. (rows, error)."""
    if not path.is_file():
        return {}, None
    try:
        con = _ro_connect(path)
        try:
            cols = _columns(con, "thread_goals")
            if not {"thread_id", "status"} <= cols:
                return {}, "goals_1.sqlite has no thread_goals(thread_id, status)"
            sel = [c for c in ("thread_id", "status", "objective", "updated_at_ms") if c in cols]
            rows = con.execute(f"SELECT {', '.join(sel)} FROM thread_goals").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return {}, f"goals_1.sqlite unreadable ({exc})"
    return {r[0]: dict(zip(sel, r)) for r in rows}, None


def _set_client_versions(targets: list[Target]) -> None:
    """Each live thread's client version: what its lock holder's own binary answers to
    `--version` (the process that runs it now), else the thread's recorded `cli_version`.
    Blocking (one `--version` per distinct binary, cached)."""
    for i, t in enumerate(targets):
        detail = CodexDetail.of(t)
        version = detail.cli_version
        holder = detail.holder_pid
        if holder:
            try:
                exe = os.readlink(f"/proc/{holder}/exe")
            except OSError:
                exe = None
            if exe:
                version = binary_version(exe, kind=KIND) or version
                detail = detail.model_copy(update={"holder_version": version})
        targets[i] = t.model_copy(update={"client_version": version, "detail": detail,
                                          "client_status": version_status(KIND, version)})


# -- the daemon control socket (codex.md §2.5) --------------------------------------------------




async def daemon_thread_status(socket_path: Path, thread_ids: Sequence[str], timeout: float = 3.0,
                               client_name: str = "relay-repl") -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(loaded thread ids, thread/read result per id) from the daemon, in one connection
    (daemon.daemon_connection): `thread/loaded/list` and one `thread/read {includeTurns:false}`
    per id, pipelined. Raises DaemonError with a one-line reason.
    """
    import anyio  # here, not at the top: a loopless listing (no daemon) never imports it

    from relay_repl.agents.codex.daemon import daemon_connection

    try:
        with anyio.fail_after(timeout):
            async with daemon_connection(socket_path, timeout, client_name, "relay_repl discovery") as conn:
                listed = await conn.request("thread/loaded/list", {})
                ids = {tid: await conn.request("thread/read", {"threadId": tid, "includeTurns": False})
                       for tid in thread_ids}
                answers = await conn.collect({listed, *ids.values()})
    except TimeoutError as exc:
        raise DaemonError(f"no answer within {timeout:g}s") from exc
    from relay_repl.agents.codex.daemon_sync import status_from

    return status_from(answers, listed, ids)


# -- pane mapping ---------------------------------------------------------------------------------


@dataclass
class PaneCodex:
    """The Codex TUI processes found under one pane."""

    pane: Pane
    tui_pids: list[int] = field(default_factory=list)
    no_daemon: bool = False
    resume_ids: list[str] = field(default_factory=list)
    footer_name: str | None = None


def is_codex_argv(argv: Sequence[str]) -> bool:
    """Whether a process is Codex (its binary, or the npm wrapper's `codex.js`)."""
    if not argv:
        return False
    names = [os.path.basename(a) for a in argv[:2]]
    return any(n in ("codex", "codex.js") for n in names)


def is_codex_tui(argv: Sequence[str]) -> bool:
    """Whether a process is a Codex TUI one could type into (not the app-server daemon)."""
    return is_codex_argv(argv) and "app-server" not in argv


def codex_panes(panes: Sequence[Pane], table: Mapping[int, ProcStat]) -> dict[tuple[str, str], PaneCodex]:
    """Panes whose process tree runs a Codex TUI (not an app-server), with argv evidence."""
    out: dict[tuple[str, str], PaneCodex] = {}
    children = children_map(dict(table))
    for pane in panes:
        if pane.dead:
            continue
        pc = PaneCodex(pane)
        for pid in descendants(pane.pane_pid, dict(table), children):
            argv = read_cmdline(pid) or []
            if not is_codex_argv(argv) or "app-server" in argv:
                continue
            pc.tui_pids.append(pid)
            if "--no-daemon" in argv:
                pc.no_daemon = True
            for i, a in enumerate(argv[:-1]):
                if a == "resume" and UUID_RE.match(argv[i + 1]):
                    pc.resume_ids.append(argv[i + 1])
        if pc.tui_pids:
            out[pane.key] = pc
    return out


ROLLOUT_TAIL = 512 * 1024


def collaboration_mode(rollout: str | os.PathLike[str] | None) -> str | None:
    """The thread's current collaboration mode ("plan", "default", ...) from its rollout.

    Measured on 0.169.0: switching mode writes a `thread_settings_applied` event
    (`thread_settings.collaboration_mode.mode`) at once, and every turn's
    `turn_context` repeats `collaboration_mode.mode`; the latest one wins. Only the
    tail is read (each turn repeats it, so it is never far from the end), newest line
    first, and only lines that mention it are parsed: this runs on every refresh.
    """
    if not rollout:
        return None
    import relay_repl.store.jsonl as jsonl

    for rec in jsonl.latest_first(rollout, tail=ROLLOUT_TAIL, containing=b'"collaboration_mode"'):
        p = rec.get("payload")
        if not isinstance(p, dict):
            continue
        cm = p.get("collaboration_mode")
        if cm is None and p.get("type") == "thread_settings_applied":
            cm = (p.get("thread_settings") or {}).get("collaboration_mode")
        if isinstance(cm, dict) and isinstance(cm.get("mode"), str):
            return cm["mode"]
    return None


def footer_thread_name(screen: str, footer: Sequence[re.Pattern[str]]) -> str | None:
    """The thread name in the LAST footer line (`<model> <effort> · <cwd> · <name>`), if any."""
    best: tuple[int, str | None] | None = None
    for pat in footer:
        for m in pat.finditer(screen):
            if best is None or m.start() >= best[0]:
                best = (m.start(), (m.groupdict().get("thread_name") or None))
    return best[1].strip() if best and best[1] else None


# -- provider ---------------------------------------------------------------------------------------


class _Thread(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    lock: str | None = None
    index_name: str | None = None
    row: dict[str, Any] | None = None
    rollout: str | None = None


def reply_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """The route this thread's configuration allows (agents.replies picks: the operator's `via`,
    else `relay reply` when no sandbox is in its way, else the relay MCP server, else the turn reply)."""
    from relay_repl.agents.codex.replies import codex_route

    return codex_route(target, ctx, relay_reply_command_route)


def relay_reply_command_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """Codex cannot send natively: its agent runs `relay reply ID TEXT` as a tool command."""
    from relay_repl.core.plan import relay_reply_route

    return relay_reply_route(target.spec, ctx, (
        f"the connecting `relay reply` was started by the Codex host holding thread {target.address} "
        f"(pid {target.pid}) and its CODEX_THREAD_ID is that thread"))


class CodexProvider:
    """Discovers Codex threads for one CODEX_HOME. `await discover()` is cheap to repeat.

    Reported: every thread with a lock file or a session_index.jsonl line, plus the
    `recent_unloaded` most recently updated unarchived threads of state_5.sqlite —
    unloaded threads still take durable `codex queue` items, so they are listed
    (live=False), but a long history is not dumped into every refresh.
    `notes` holds what the last refresh could not read (one line each).
    """

    kind = KIND

    def __init__(
        self,
        *,
        codex_home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        panes: PaneRoster | None = None,
        adapter: AdapterSpec | None = None,
        recent_unloaded: int = 50,
        daemon_timeout: float = 3.0,
    ) -> None:
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.adapter = adapter or load_adapter(KIND)
        self.home = Path(codex_home) if codex_home is not None else self.adapter.registry.base(self.env)
        self.panes = panes or PaneRoster(env=self.env)
        self.recent_unloaded = recent_unloaded
        self.daemon_timeout = daemon_timeout
        self.notes: list[str] = []

    def __repr__(self) -> str:
        return f"<CodexProvider CODEX_HOME={self.home}>"

    def _p(self, key: str) -> Path:
        return self.home / self.adapter.registry.paths[key]

    # -- own address (seed §1) -----------------------------------------------------------------
    def own_address(self) -> Me | None:
        """`$CODEX_THREAD_ID` when this process runs as a Codex tool command, else None."""
        from relay_repl.agents.codex.own import own_address

        found = own_address(self.env)
        return Me(role="agent", agent="codex", address=found[0]) if found else None

    # -- who sent an inbound message (origin verdicts) -------------------------------------------
    def _lock_files(self) -> dict[str, Path]:
        try:
            files = os.listdir(self._p("locks_dir"))
        except OSError:
            return {}
        return {f[:-5]: self._p("locks_dir") / f for f in files
                if f.endswith(".lock") and not f.startswith(".") and UUID_RE.match(f[:-5])}

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        """The Codex thread(s) process `pid` hosts, or None.

        A host is the holder of a `thread-writer-locks/<T>.lock` flock, or the daemon
        of `daemon.pid` (codex.md §0, §2.2). The daemon hosts every thread of its
        CODEX_HOME, so when it hosts several, its pid proves the host only
        (`host_only`): which thread acted is proven by that thread's own rollout
        (`prove_thread`). `CODEX_THREAD_ID` in a command's environment is noted but
        proves nothing: whoever starts a command can set it.
        """
        held = self._held_by(pid)
        dpid, ticks = read_daemon_pid(self._p("daemon_pid"))
        is_daemon = dpid == pid and (ticks is None or proc_start(pid) == ticks)
        if not held and not is_daemon:
            return None
        names = {tid: line.get("thread_name") for tid, line in read_session_index(self._p("session_index")).items()}
        prefix = self.adapter.prefix or KIND
        evidence = (f"pid {pid} holds the lock of {len(held)} thread(s)" if held else f"pid {pid} is no thread's lock holder")
        if is_daemon:
            evidence += f"; it is the daemon of {self.home} (daemon.pid)"
        for p in below:
            env = read_environ(p) or {}
            if env.get("CODEX_THREAD_ID"):
                evidence += f"; the command it ran claims CODEX_THREAD_ID={env['CODEX_THREAD_ID']} (a claim, not proof)"
                break
        specs: dict[str, str] = {}
        for tid in held:
            name = names.get(tid)
            spec = f"{prefix}:{name or tid}"
            specs[tid] = spec
            if isinstance(name, str) and name:
                specs[name] = spec
        spec = specs[held[0]] if len(held) == 1 else f"{prefix}:daemon {pid}"
        from relay_repl.core.inbound import PeerIdentity

        return PeerIdentity(kind=KIND, spec=spec, pid=pid, claimable=frozenset(specs), evidence=evidence, specs=specs,
                            host_only=len(held) > 1)

    def prove_thread(self, ident: PeerIdentity, call: ToolCall) -> tuple[str | None, str]:
        """The one thread of host `ident` whose own rollout holds `call`, and the evidence;
        (None, why) when none or several do. The host writes a thread's rollout as its model
        makes the call, before the tool runs (codex.md §9), so the call is there when the
        answer arrives."""
        tids = [k for k in ident.specs if UUID_RE.match(k)]
        found: list[str] = []
        for tid in tids:
            rollout = rollout_path(self.home, tid)
            if rollout is None:
                continue
            if call.tool == "relay_reply" and call.relay_id:
                hit = reply_calls(rollout, call.relay_id, call.text) > 0
            elif call.tool == "relay_send" and call.text:
                hit = bool(pending_send_calls(rollout, call.text))
            elif call.tool == "relay_request_status" and call.relay_id:
                hit = bool(pending_status_calls(rollout, call.relay_id))
            else:
                hit = bool(pending_calls(rollout, call.tool))
            if hit:
                found.append(tid)
        what = (f"a {call.tool} call for {call.relay_id}" if call.relay_id else f"a {call.tool} call in flight")
        if len(found) == 1:
            return ident.specs[found[0]], f"thread proven: its own rollout holds {what}"
        if not found:
            return None, f"no hosted thread's rollout holds {what}"
        return None, f"{len(found)} hosted threads' rollouts hold {what}"

    def claimed_session(self, address: str) -> str | None:
        """The loaded thread a claimed address names (its id or session_index name), or None."""
        locks = self._lock_files()
        names = {tid: line.get("thread_name") for tid, line in read_session_index(self._p("session_index")).items()}
        held = self._holders(locks) if locks else {}
        for tid in held:
            if address in (tid, names.get(tid)):
                return f"{self.adapter.prefix or KIND}:{names.get(tid) or tid}"
        return None

    # -- holders ------------------------------------------------------------------------------------
    def _held_by(self, pid: int) -> list[str]:
        """The threads whose writer lock process `pid` holds now: asked of `pid` alone (its
        descriptors' fdinfo, system/proc.flocked_files), not of the machine's whole /proc/locks,
        which is read only where fdinfo cannot tell (another user's process, an old kernel)."""
        mine = flocked_files(pid, name_ok=lambda link: link.endswith(".lock"))
        if mine is not None and not mine:
            return []  # holds no lock at all: no need to list the lock files
        locks = self._lock_files()
        if not locks:
            return []
        if mine is None:
            return [tid for tid, holder in self._holders(locks).items() if holder == pid]
        return [tid for tid, path in locks.items() if file_key(path) in mine]

    def _holders(self, locks: dict[str, Path]) -> dict[str, int]:
        """thread id → holder pid, for locked threads only."""
        table = read_proc_locks()
        held: dict[str, int] = {}
        fallback: list[str] = []
        for tid, path in locks.items():
            pids = lock_holders(table, path) if table is not None else []
            alive = [p for p in pids if pid_alive(p)]
            if alive:
                held[tid] = alive[0]
            elif table is None or pids:  # unreadable /proc/locks, or a holder we cannot see
                fallback.append(tid)
        if fallback:
            self.notes.append(f"fuser used for {len(fallback)} lock(s)")
            res = fuser_holders([locks[t] for t in fallback])
            for tid in fallback:
                pids = [p for p in res.get(str(locks[tid]), []) if pid_alive(p)]
                if pids:
                    held[tid] = pids[0]
        return held

    def _holder_kind(self, pid: int, daemon: tuple[int | None, str | None]) -> str:
        dpid, ticks = daemon
        if dpid == pid and (ticks is None or proc_start(pid) == ticks):
            return "daemon"
        argv = read_cmdline(pid) or []
        if "app-server" in argv:
            return "daemon"
        if "exec" in argv[1:]:
            return "exec"
        return "tui"

    # -- discover -------------------------------------------------------------------------------------
    async def discover(self) -> list[Target]:
        self.notes = []
        if not self.home.is_dir():
            self.notes.append(f"{self.home} does not exist")
            return []
        threads: dict[str, _Thread] = {}

        def get(tid: str) -> _Thread:
            return threads.setdefault(tid, _Thread(id=tid))

        locks: dict[str, Path] = {}
        try:
            for f in os.listdir(self._p("locks_dir")):
                if f.endswith(".lock") and not f.startswith(".") and UUID_RE.match(f[:-5]):
                    locks[f[:-5]] = self._p("locks_dir") / f
                    get(f[:-5]).lock = str(locks[f[:-5]])
        except FileNotFoundError:
            pass
        except OSError as exc:
            self.notes.append(f"cannot list thread-writer-locks ({exc.strerror})")

        for tid, line in read_session_index(self._p("session_index")).items():
            name = line.get("thread_name")
            if isinstance(name, str) and name:
                get(tid).index_name = name

        from relay_repl.agents.codex.sqlite_home import sqlite_home

        sq = sqlite_home(self.home, self.env)  # config.toml's sqlite_home / $CODEX_SQLITE_HOME move the databases
        if sq.problem:
            self.notes.append(f"{sq.problem}; reading Codex's databases in {sq.path} ({sq.source})")
        dbs = sq.path
        rows, err = read_threads(dbs / self.adapter.registry.paths["state_db"], sorted(threads), self.recent_unloaded)
        if err:
            self.notes.append(err)
        for tid, row in rows.items():
            if row.get("thread_source") in HELPER_SOURCES and tid not in locks:
                continue
            t = get(tid)
            t.row = row
            rp = row.get("rollout_path")
            if rp and os.path.isfile(rp):
                t.rollout = rp
        missing = {tid for tid, t in threads.items() if t.rollout is None and t.row is None}
        for tid, path in scan_rollouts(self.home / "sessions", missing).items():
            threads[tid].rollout = str(path)

        goals, gerr = read_goals(dbs / self.adapter.registry.paths["goals_db"])
        if gerr:
            self.notes.append(gerr)

        held = self._holders(locks)
        daemon = read_daemon_pid(self._p("daemon_pid"))
        kinds = {tid: self._holder_kind(pid, daemon) for tid, pid in held.items()}

        # Live status from the daemon, one connection for all daemon-held threads.
        daemon_ids = sorted(t for t, k in kinds.items() if k == "daemon")
        reads: dict[str, dict[str, Any]] = {}
        loaded: list[str] = []
        daemon_err: str | None = None
        sock = self._p("control_socket")
        if daemon_ids:
            if not os.path.exists(sock):
                daemon_err = f"control socket {sock} missing"
            else:
                try:
                    # the standard-library client (daemon_sync.py): a one-shot listing needs no event loop for it
                    from relay_repl.agents.codex.daemon_sync import daemon_thread_status_sync

                    loaded, reads = await loopless.to_thread(daemon_thread_status_sync, sock, list(daemon_ids),
                                                             self.daemon_timeout)
                except DaemonError as exc:
                    daemon_err = str(exc)

        pane_of, pane_why, pane_notes = await self._map_panes(threads, held, kinds, reads)

        targets: list[Target] = []
        for tid in sorted(threads):
            t = threads[tid]
            row = t.row or {}
            read = reads.get(tid, {})
            if read.get("ephemeral") or read.get("threadSource") in HELPER_SOURCES or ("path" in read and read["path"] is None):
                continue  # helper threads (title generation etc.): never targets
            name = t.index_name or row.get("name") or read.get("name") or row.get("title") or tid
            if t.index_name:
                named_by = f"session_index.jsonl thread_name={t.index_name}"
            elif row.get("name"):
                named_by = f"state_5.sqlite name={row['name']}"
            elif row.get("title"):
                named_by = f"state_5.sqlite title={str(row['title'])[:40]!r} (never renamed)"
            else:
                named_by = "unnamed (uuid)"
            common: dict[str, Any] = {"evidence_file": t.rollout}
            detail: dict[str, Any] = {
                "thread_id": tid,
                "codex_home": str(self.home),
                "sqlite_home": str(dbs),
                "lock": t.lock,
                "cwd": row.get("cwd") or read.get("cwd"),
                "title": row.get("title"),
                "source": row.get("source") or read.get("source"),
                "thread_source": row.get("thread_source") or read.get("threadSource"),
                "cli_version": row.get("cli_version") or read.get("cliVersion"),
                "archived": bool(row.get("archived")) if row else None,
            }
            goal = goals.get(tid)
            if goal:
                detail["goal_status"] = goal.get("status")
                detail["goal_objective"] = goal.get("objective")
            transports: list[str] = []
            if t.rollout:
                transports.append("codex-queue")
            else:
                detail["queue_note"] = "no rollout yet: `codex queue` fails until the thread's first turn"
            evidence = [named_by]
            pid = held.get(tid)
            if pid is None:
                why = "not loaded (lock free)" if t.lock else "not loaded (no lock file)"
                evidence.append(why)
                targets.append(Target(kind=KIND, prefix=self.adapter.prefix, name=name, address=tid, pid=None, live=False, state="unknown",
                                      transports=tuple(transports), identified_by="; ".join(evidence),
                                      detail=CodexDetail(**detail), stale_reason=why, **common,
                                      client_version=detail["cli_version"],
                                      client_status=version_status(KIND, detail["cli_version"])))
                continue
            kind = kinds[tid]
            detail["holder_pid"] = pid
            detail["holder_kind"] = kind
            evidence.append(f"lock held by {kind} pid {pid}")
            state, source = "unknown", ""
            if kind == "daemon":
                if read:
                    status = read.get("status") or {}
                    state = self._map_status(status)
                    detail["status_raw"] = status
                    source = f"status {status.get('type', '?')} from daemon"
                    if tid not in loaded:
                        detail["daemon_note"] = "thread/read answered but thread/loaded/list omits it"
                else:
                    source = f"daemon unreachable: {daemon_err}" if daemon_err else "daemon did not report it"
            else:
                source = "no daemon: lock only"
            detail["state_source"] = source
            evidence.append(source)
            if goal and goal.get("status") == "active" and state != "waiting":
                state = "never-idle"
                evidence.append("goal active (auto-resumes)")
            mode = collaboration_mode(t.rollout)
            if mode:
                detail["collaboration_mode"] = mode
                detail["plan_mode"] = mode == "plan"
                if mode == "plan":
                    evidence.append("in Plan mode (rollout thread settings)")
            pane = pane_of.get(tid)
            if pane is not None:
                transports.append("tmux")
                detail.update(pane.detail_fields())
                common.update(pane.target_fields())
                evidence.append(f"pane {pane.pane_id}: {pane_why[tid]}")
            elif tid in pane_notes:
                detail["pane_note"] = pane_notes[tid]
            targets.append(Target(kind=KIND, prefix=self.adapter.prefix, name=name, address=tid, pid=pid, live=True,
                                  state=state,
                                  pane=pane.pane_id if pane else None, transports=tuple(transports),
                                  identified_by="; ".join(evidence), detail=CodexDetail(**detail), **common))
        await loopless.to_thread(_set_client_versions, targets)
        return targets

    def _map_status(self, status: Mapping[str, Any]) -> str:
        typ = str(status.get("type", ""))
        flags = status.get("activeFlags") or []
        for f in flags:
            mapped = self.adapter.status.get(f"{typ}+{f}")
            if mapped:
                return mapped
        return self.adapter.status.get(typ, "unknown")

    async def _map_panes(
        self,
        threads: Mapping[str, _Thread],
        held: Mapping[str, int],
        kinds: Mapping[str, str],
        reads: Mapping[str, Mapping[str, Any]],
    ) -> tuple[dict[str, Pane], dict[str, str], dict[str, str]]:
        """thread id → pane, with the evidence, for live threads only (see module doc)."""
        if not held:
            return {}, {}, {}
        panes = await self.panes.panes()
        if not panes:
            return {}, {}, {}
        table = await self.panes.processes()
        cands = codex_panes(panes, table)
        claims: dict[str, list[tuple[Pane, str]]] = {}
        by_pid = {p.pane_pid: p for p in panes if not p.dead}

        # (a) a --no-daemon TUI (or exec) holding the lock: the pane above the holder.
        for tid, pid in held.items():
            if kinds[tid] != "tui":
                # The daemon may still be the first TUI's child: never walk its ancestry.
                # An exec run has no composer to type into.
                continue
            for anc in ancestors(pid, {p: s.ppid for p, s in table.items()}):
                if anc in by_pid:
                    claims.setdefault(tid, []).append((by_pid[anc], f"holder pid {pid} runs in it"))
                    break

        # (b) a footer that names the thread, unique among panes and among live threads.
        footer = self.adapter.screen.compiled("footer")
        shots = await self.panes.capture([pc.pane for pc in cands.values()]) if footer and cands else {}
        names: dict[str, list[str]] = {}
        for tid in held:
            t = threads[tid]
            nm = t.index_name or (t.row or {}).get("name") or reads.get(tid, {}).get("name")
            if nm:
                names.setdefault(nm, []).append(tid)
        footer_panes: dict[str, list[Pane]] = {}
        for key, pc in cands.items():
            pc.footer_name = footer_thread_name(shots.get(key, ""), footer)
            if pc.footer_name:
                footer_panes.setdefault(pc.footer_name, []).append(pc.pane)
        notes: dict[str, str] = {}
        for nm, tids in names.items():
            fps = footer_panes.get(nm, [])
            if not fps:
                continue
            if len(tids) == 1 and len(fps) == 1:
                claims.setdefault(tids[0], []).append((fps[0], f"footer names thread {nm!r}"))
            else:
                for tid in tids:
                    notes[tid] = f"footer name {nm!r} is shared by {len(tids)} thread(s) and {len(fps)} pane(s); no pane rostered"

        # (c) `codex resume <uuid>` in argv, unless the footer names another thread.
        for pc in cands.values():
            for rid in pc.resume_ids:
                if rid not in held:
                    continue
                t = threads[rid]
                mine = t.index_name or (t.row or {}).get("name")
                if pc.footer_name and pc.footer_name != mine:
                    continue
                claims.setdefault(rid, []).append((pc.pane, f"TUI started as `codex resume {rid}`"))

        # Keep only unambiguous claims: one pane per thread and one thread per pane.
        pane_users: dict[tuple[str, str], set[str]] = {}
        for tid, cl in claims.items():
            for pane, _ in cl:
                pane_users.setdefault(pane.key, set()).add(tid)
        out: dict[str, Pane] = {}
        why: dict[str, str] = {}
        for tid, cl in claims.items():
            keys = {p.key for p, _ in cl}
            if len(keys) != 1:
                notes[tid] = f"{len(keys)} panes claim this thread; none rostered"
                continue
            pane = cl[0][0]
            if len(pane_users[pane.key]) > 1:
                notes[tid] = f"pane {pane.pane_id} is claimed by {len(pane_users[pane.key])} threads; none rostered"
                continue
            out[tid] = pane
            why[tid] = " and ".join(dict.fromkeys(w for _, w in cl))
        return out, why, notes
