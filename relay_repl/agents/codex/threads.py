"""Codex threads read from one CODEX_HOME, with the standard library alone: the registry readers,
pane evidence and the steps of discovery both listings share.

`provider.CodexProvider.discover` (the models) and `plain_listing.py` (`relay targets`' plain
path, loaded by file without the agents package) run the same steps here, each wrapping the
result its own way (a Target and CodexDetail, or a TargetRow): one home for how a thread is
named, held, stated and placed in a pane (provider.py's doc says why each is read as it is).
What needs a loop or a model (the roster's captures, a Target) stays with the caller, which
hands its results in.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from relay_repl.store.sqlite_read import connect_read_only
from relay_repl.system.proc import (ProcStat, ancestors, children_map, descendants, lock_holders, pid_alive, proc_start,
                                    read_cmdline)

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HELPER_SOURCES = {"thread_title"}
VERSION_ENV = {"CODEX_HOME": "/dev/null/relay-version"}
"""What `codex --version` runs with (kind.py's `version_env`: its home nowhere, agents/kind.NO_HOME)."""


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


def read_daemon_pid(path: Path) -> tuple[int | None, str | None]:
    """(pid, startTicks) from `app-server-daemon/daemon.pid`, or (None, None): its one home is
    outside.py (the cheap ancestry rule), loaded by file as this module is."""
    from relay_repl.system.prefetch import load_by_file

    mod = load_by_file("codex-outside", "relay_repl.agents.codex.outside", "relay_repl.surely_outside")
    if mod is None:  # pragma: no cover - the file ships beside this one
        raise ImportError("relay_repl.agents.codex.outside")
    result: tuple[int | None, str | None] = mod.read_daemon_pid(path)
    return result


class PaneCodex:
    """The Codex TUI processes found under one pane (a plain class: no dataclasses on the plain path)."""

    def __init__(self, pane: Any) -> None:
        self.pane = pane
        self.tui_pids: list[int] = []
        self.no_daemon = False
        self.resume_ids: list[str] = []
        self.footer_name: str | None = None


def is_codex_argv(argv: Sequence[str]) -> bool:
    """Whether a process is Codex (its binary, or the npm wrapper's `codex.js`)."""
    if not argv:
        return False
    names = [os.path.basename(a) for a in argv[:2]]
    return any(n in ("codex", "codex.js") for n in names)


def is_codex_tui(argv: Sequence[str]) -> bool:
    """Whether a process is a Codex TUI one could type into (not the app-server daemon)."""
    return is_codex_argv(argv) and "app-server" not in argv


def codex_panes(panes: Sequence[Any], table: Mapping[int, ProcStat]) -> dict[tuple[str, str], PaneCodex]:
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


class Thread:
    """One thread as discovery gathers it (its lock, session_index name, state row, rollout)."""

    __slots__ = ("id", "lock", "index_name", "row", "rollout")

    def __init__(self, id: str) -> None:
        self.id = id
        self.lock: str | None = None
        self.index_name: str | None = None
        self.row: dict[str, Any] | None = None
        self.rollout: str | None = None


def gather(home: Path, paths: Mapping[str, str], env: Mapping[str, str], recent: int, notes: list[str],
           sqlite_home: Callable[..., Any], scan: Callable[[Path, set[str]], Mapping[str, Path]]
           ) -> tuple[dict[str, Thread], dict[str, Path], Path, dict[str, dict[str, Any]]]:
    """(threads by id, lock files by id, the databases' directory, goals by thread id), noting what
    could not be read. `sqlite_home(home, env)`: sqlite_home.py's; `scan`: rollout.scan_rollouts."""
    threads: dict[str, Thread] = {}

    def get(tid: str) -> Thread:
        return threads.setdefault(tid, Thread(tid))

    locks_dir = home / paths["locks_dir"]
    locks: dict[str, Path] = {}
    try:
        for f in os.listdir(locks_dir):
            if f.endswith(".lock") and not f.startswith(".") and UUID_RE.match(f[:-5]):
                locks[f[:-5]] = locks_dir / f
                get(f[:-5]).lock = str(locks[f[:-5]])
    except FileNotFoundError:
        pass
    except OSError as exc:
        notes.append(f"cannot list thread-writer-locks ({exc.strerror})")

    for tid, line in read_session_index(home / paths["session_index"]).items():
        name = line.get("thread_name")
        if isinstance(name, str) and name:
            get(tid).index_name = name

    sq = sqlite_home(home, env)  # config.toml's sqlite_home / $CODEX_SQLITE_HOME move the databases
    if sq.problem:
        notes.append(f"{sq.problem}; reading Codex's databases in {sq.path} ({sq.source})")
    dbs = sq.path
    rows, err = read_threads(dbs / paths["state_db"], sorted(threads), recent)
    if err:
        notes.append(err)
    for tid, row in rows.items():
        if row.get("thread_source") in HELPER_SOURCES and tid not in locks:
            continue
        t = get(tid)
        t.row = row
        rp = row.get("rollout_path")
        if rp and os.path.isfile(rp):
            t.rollout = rp
    missing = {tid for tid, t in threads.items() if t.rollout is None and t.row is None}
    for tid, path in scan(home / "sessions", missing).items():
        threads[tid].rollout = str(path)

    goals, gerr = read_goals(dbs / paths["goals_db"])
    if gerr:
        notes.append(gerr)
    return threads, locks, dbs, goals


def holders(locks: Mapping[str, Path], table: Any) -> tuple[dict[str, int], list[str]]:
    """(thread id → holder pid, for locked threads; threads whose holder /proc/locks cannot show,
    for `fuser`). `table`: system/proc.read_proc_locks(), as the caller read it (None: unreadable)."""
    held: dict[str, int] = {}
    fallback: list[str] = []
    for tid, path in locks.items():
        pids = lock_holders(table, path) if table is not None else []
        alive = [p for p in pids if pid_alive(p)]
        if alive:
            held[tid] = alive[0]
        elif table is None or pids:  # unreadable /proc/locks, or a holder we cannot see
            fallback.append(tid)
    return held, fallback


def holder_kind(pid: int, daemon: tuple[int | None, str | None]) -> str:
    """daemon, exec or tui: what holds a thread's lock."""
    dpid, ticks = daemon
    if dpid == pid and (ticks is None or proc_start(pid) == ticks):
        return "daemon"
    argv = read_cmdline(pid) or []
    if "app-server" in argv:
        return "daemon"
    if "exec" in argv[1:]:
        return "exec"
    return "tui"


DaemonSays = tuple[list[str], dict[str, dict[str, Any]], tuple[int | None, str | None], str | None]


def daemon_status(sock: str | os.PathLike[str], kinds: Mapping[str, str],
                  ask: Callable[[list[str]], Any]) -> DaemonSays:
    """The daemon's word on the threads it holds, one connection for all: (the ids it has loaded,
    its read of each, its own (pid, version), why it could not be asked, or None). `ask(ids)`:
    daemon_sync.daemon_status_sync on this socket, raising DaemonError with a one-line reason."""
    from relay_repl.core.errors import DaemonError

    daemon_ids = sorted(t for t, k in kinds.items() if k == "daemon")
    if not daemon_ids:
        return [], {}, (None, None), None
    if not os.path.exists(sock):
        return [], {}, (None, None), f"control socket {sock} missing"
    try:
        status = ask(daemon_ids)
    except DaemonError as exc:
        return [], {}, (None, None), str(exc)
    return status.loaded, status.reads, (status.pid, status.version), None


def map_status(status: Mapping[str, Any], status_map: Mapping[str, str]) -> str:
    """The daemon's thread status as a state, by the adapter's `status` table."""
    typ = str(status.get("type", ""))
    flags = status.get("activeFlags") or []
    for f in flags:
        mapped = status_map.get(f"{typ}+{f}")
        if mapped:
            return mapped
    return status_map.get(typ, "unknown")


def pane_names(threads: Mapping[str, Thread], held: Mapping[str, int], reads: Mapping[str, Mapping[str, Any]]
               ) -> dict[str, list[str]]:
    """name → live threads of that name (what a pane's footer may name)."""
    names: dict[str, list[str]] = {}
    for tid in held:
        t = threads[tid]
        nm = t.index_name or (t.row or {}).get("name") or reads.get(tid, {}).get("name")
        if nm:
            names.setdefault(nm, []).append(tid)
    return names


def assign_panes(threads: Mapping[str, Thread], held: Mapping[str, int], kinds: Mapping[str, str],
                 reads: Mapping[str, Mapping[str, Any]], panes: Sequence[Any], table: Mapping[int, ProcStat],
                 cands: Mapping[tuple[str, str], PaneCodex], shots: Mapping[tuple[str, str], str],
                 footer: Sequence[re.Pattern[str]]) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """thread id → pane, with the evidence, and notes, for live threads (provider.py's doc): `cands`
    as codex_panes gives them, `shots` their captures."""
    claims: dict[str, list[tuple[Any, str]]] = {}
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
    names = pane_names(threads, held, reads)
    footer_panes: dict[str, list[Any]] = {}
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
    out: dict[str, Any] = {}
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


def target_fields(home: Path, dbs: Path, threads: Mapping[str, Thread], reads: Mapping[str, Mapping[str, Any]],
                  loaded: Sequence[str], daemon_err: str | None, held: Mapping[str, int], kinds: Mapping[str, str],
                  goals: Mapping[str, Mapping[str, Any]], pane_of: Mapping[str, Any], pane_why: Mapping[str, str],
                  pane_notes: Mapping[str, str], status_map: Mapping[str, str], prefix: str,
                  version_of: Callable[[str], str | None], status_word: Callable[[str | None], str],
                  daemon_says: tuple[int | None, str | None] = (None, None),
                  ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(Target fields, CodexDetail fields) of each thread, in id order. `version_of(exe)`: what a
    holder's binary answers to --version (versions.binary_version); `status_word(version)`: the
    version policy's word (versions.version_status). `daemon_says`: (pid, version) of the daemon
    that answered the status requests (daemon_sync.DaemonStatus): a thread whose lock that very
    process holds takes its client version from it, and its binary is not run."""
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
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
            "codex_home": str(home),
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
            out.append(({"name": name, "address": tid, "pid": None, "live": False, "state": "unknown",
                         "transports": tuple(transports), "identified_by": "; ".join(evidence), "stale_reason": why,
                         **common, "client_version": detail["cli_version"],
                         "client_status": status_word(detail["cli_version"])}, detail))
            continue
        kind = kinds[tid]
        detail["holder_pid"] = pid
        detail["holder_kind"] = kind
        evidence.append(f"lock held by {kind} pid {pid}")
        state, source = "unknown", ""
        if kind == "daemon":
            if read:
                status = read.get("status") or {}
                state = map_status(status, status_map)
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
        # the client: the lock holder's own version (the daemon's word when the daemon that answered holds the
        # lock, else what its binary answers to --version), else the recorded cli_version
        version = detail["cli_version"]
        if kind == "daemon" and daemon_says[1] is not None and daemon_says[0] == pid:
            version = detail["holder_version"] = daemon_says[1]
        else:
            try:
                exe: str | None = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                exe = None
            if exe:
                version = version_of(exe) or version
                detail["holder_version"] = version
        out.append(({"name": name, "address": tid, "pid": pid, "live": True, "state": state,
                     "pane": pane.pane_id if pane else None, "transports": tuple(transports),
                     "identified_by": "; ".join(evidence), **common, "client_version": version,
                     "client_status": status_word(version)}, detail))
    return out
