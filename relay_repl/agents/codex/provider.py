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

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.codex.evidence import pending_calls, pending_send_calls, pending_status_calls, reply_calls
from relay_repl.agents.codex.rollout import scan_rollouts
from relay_repl.agents.codex import threads as steps
from relay_repl.agents.codex.threads import (HELPER_SOURCES as HELPER_SOURCES, ROLLOUT_TAIL as ROLLOUT_TAIL,
                                             THREAD_COLUMNS as THREAD_COLUMNS, UUID_RE, PaneCodex as PaneCodex,
                                             codex_panes, collaboration_mode as collaboration_mode,
                                             footer_thread_name as footer_thread_name, is_codex_argv as is_codex_argv,
                                             is_codex_tui as is_codex_tui, read_daemon_pid, read_goals as read_goals,
                                             read_session_index, read_threads as read_threads)
from relay_repl.core.errors import DaemonError
from relay_repl.core.target import Me, Target
from relay_repl.agents.adapter import AdapterSpec, load_adapter
from relay_repl.agents.versions import binary_version, version_status
from relay_repl.system import loopless
from relay_repl.system.panes import PaneRoster
from relay_repl.system.proc import (file_key, flocked_files, fuser_holders, pid_alive, proc_start, read_environ,
                                    read_proc_locks)

if TYPE_CHECKING:  # annotations only: plan/inbound load on first use, off the `relay targets` path
    from relay_repl.core.inbound import PeerIdentity, ToolCall
    from relay_repl.core.plan import ReplyContext, ReplyRoute

KIND = "codex"


def _is_lock(link: str) -> bool:
    """A descriptor worth reading for a thread's writer lock (by the path it links to; outside.py's
    `lock_name`, which is loaded by file)."""
    return link.endswith(".lock")


# -- registry readers (pure-ish: files only) -------------------------------------------------


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


# -- provider ---------------------------------------------------------------------------------------


def reply_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """The route this thread's configuration allows (agents.replies picks: the operator's `via`,
    else `relay reply` when no sandbox is in its way, else the relay MCP server, else the turn reply)."""
    from relay_repl.agents.codex.replies import codex_route

    return codex_route(target, ctx, relay_reply_command_route)


def relay_reply_command_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """Codex cannot send natively: its agent runs `relay reply ID TEXT` as a tool command."""
    from relay_repl.agents.codex.plan_words import reply_verified_by
    from relay_repl.core.plan import relay_reply_route

    return relay_reply_route(target.spec, ctx, reply_verified_by(target.address, target.pid))


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
        dpid, ticks = read_daemon_pid(self._p("daemon_pid"))
        is_daemon = dpid == pid and (ticks is None or proc_start(pid) == ticks)
        held = self._held_by(pid, every_lock=is_daemon)
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
        # every hosted thread's rollout from one look at sessions/ (rollout_path per thread looked
        # once per thread: a daemon of 8 threads, 8 looks per reply, issue 33); the same newest file each
        rollouts = scan_rollouts(self.home / "sessions", set(tids))
        for tid in tids:
            rollout = rollouts.get(tid)
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
    def _held_by(self, pid: int, *, every_lock: bool = False) -> list[str]:
        """The threads whose writer lock process `pid` holds now: asked of `pid` alone (its
        descriptors' fdinfo, system/proc.flocked_files), not of the machine's whole /proc/locks,
        which is read only where fdinfo cannot tell (another user's process, an old kernel).
        `every_lock` (the daemon, which holds every loaded thread's lock among a hundred other
        descriptors): the home's lock files are listed first and the read stops once each is
        found held (issue 33: ~115 descriptors read per Codex reply); any other process is asked
        first whether it holds a `.lock` at all, which most do not, before the lock files are listed."""
        if every_lock:
            locks = self._lock_files()
            if not locks:
                return []
            keys = {tid: file_key(path) for tid, path in locks.items()}
            mine = flocked_files(pid, name_ok=_is_lock, want=frozenset(k for k in keys.values() if k is not None))
            if mine is not None:
                return [tid for tid, key in keys.items() if key is not None and key in mine]
            return [tid for tid, holder in self._holders(locks).items() if holder == pid]
        mine = flocked_files(pid, name_ok=_is_lock)
        if mine is not None and not mine:
            return []  # holds no lock at all: no need to list the lock files
        locks = self._lock_files()
        if not locks:
            return []
        if mine is None:
            return [tid for tid, holder in self._holders(locks).items() if holder == pid]
        return [tid for tid, path in locks.items() if file_key(path) in mine]

    def _holders(self, locks: dict[str, Path]) -> dict[str, int]:
        """thread id → holder pid, for locked threads only (threads.holders; `fuser` where /proc/locks cannot tell)."""
        held, fallback = steps.holders(locks, read_proc_locks())
        if fallback:
            self.notes.append(f"fuser used for {len(fallback)} lock(s)")
            res = fuser_holders([locks[t] for t in fallback])
            for tid in fallback:
                pids = [p for p in res.get(str(locks[tid]), []) if pid_alive(p)]
                if pids:
                    held[tid] = pids[0]
        return held

    # -- discover -------------------------------------------------------------------------------------
    async def discover(self) -> list[Target]:
        self.notes = []
        if not self.home.is_dir():
            self.notes.append(f"{self.home} does not exist")
            return []
        from relay_repl.agents.codex.sqlite_home import sqlite_home

        paths = self.adapter.registry.paths
        threads, locks, dbs, goals = steps.gather(self.home, paths, self.env, self.recent_unloaded, self.notes,
                                                  sqlite_home, scan_rollouts)
        held = self._holders(locks)
        daemon = read_daemon_pid(self._p("daemon_pid"))
        kinds = {tid: steps.holder_kind(pid, daemon) for tid, pid in held.items()}

        # Live status from the daemon, one connection for all daemon-held threads.
        sock = self._p("control_socket")

        def ask(ids: list[str]) -> Any:
            # the standard-library client (daemon_sync.py): a one-shot listing needs no event loop for it
            from relay_repl.agents.codex.daemon_sync import daemon_status_sync

            return daemon_status_sync(sock, ids, self.daemon_timeout)

        loaded, reads, daemon_says, daemon_err = await loopless.to_thread(steps.daemon_status, sock, kinds, ask)

        pane_of, pane_why, pane_notes = await self._map_panes(threads, held, kinds, reads)

        def version_of(exe: str) -> str | None:
            return binary_version(exe, kind=KIND)

        def status_word(version: str | None) -> str:
            return version_status(KIND, version)

        rows = await loopless.to_thread(steps.target_fields, self.home, dbs, threads, reads, loaded, daemon_err, held,
                                        kinds, goals, pane_of, pane_why, pane_notes, self.adapter.status,
                                        self.adapter.prefix, version_of, status_word, daemon_says)
        return [Target(kind=KIND, prefix=self.adapter.prefix, **fields, detail=CodexDetail(**detail))
                for fields, detail in rows]

    async def _map_panes(
        self,
        threads: Mapping[str, steps.Thread],
        held: Mapping[str, int],
        kinds: Mapping[str, str],
        reads: Mapping[str, Mapping[str, Any]],
    ) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
        """thread id → pane, with the evidence, for live threads only (see module doc; threads.assign_panes)."""
        if not held:
            return {}, {}, {}
        panes = await self.panes.panes()
        if not panes:
            return {}, {}, {}
        table = await self.panes.processes()
        cands = codex_panes(panes, table)
        footer = self.adapter.screen.compiled("footer")
        shots = await self.panes.capture([pc.pane for pc in cands.values()]) if footer and cands else {}
        return steps.assign_panes(threads, held, kinds, reads, panes, table, cands, shots, footer)
