"""Claude Code discovery: `claude agents --json` for the listing, `sessions/<pid>.json` for the rest.

Why this shape (claude-code.md §1, §3; seed §2):
- The listing is authoritative for *which* sessions are live, so a name is never
  resolved by scanning the socket directory (it publishes no names, keeps stale
  sockets and can hold two sockets per conversation).
- The listing has no socket path and no pane and prints `shell` as `busy`, so the
  per-pid record supplies the socket, the raw status and the rest.
- Records of dead processes often persist (the registry sweep is refused in
  containers), so every record is also checked with the kernel rule — pid alive
  and `/proc/<pid>/stat` field 22 == `procStart` — and the dead ones are reported
  as `live=False` with the reason, never used.
- The pane is the tmux pane whose `#{pane_pid}` is the record's pid; the record's
  `tmux` field is inherited by child claude processes and is not trusted.

One subprocess per refresh (`claude agents --json`), plus the shared tmux listing.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from relay_repl.core.errors import FileProblem
from relay_repl.core.file_shape import shape_problem
from relay_repl.core.target import Me, Target
from relay_repl.agents.adapter import AdapterSpec, load_adapter
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code.records import (RECORD_MAX_BYTES, invalid_reason, legacy_reason,
                                                   socket_is_ours as socket_is_ours,
                                                   transcript_path, unreadable_reason, ways_and_pane)
from relay_repl.agents.claude_code.records import _base36 as _base36, _java_hash as _java_hash, munge_cwd as munge_cwd
from relay_repl.agents.versions import version_status
from relay_repl.system import loopless
from relay_repl.system.panes import PaneRoster
from relay_repl.store.loader import read_bytes
from relay_repl.system.proc import owns_listening_socket, same_process

if TYPE_CHECKING:  # annotations only: plan/inbound load on first use, off the `relay targets` path
    from relay_repl.agents.claude_code.listing_rule import RuleListing
    from relay_repl.core.inbound import PeerIdentity
    from relay_repl.core.plan import ReplyContext, ReplyRoute

KIND = "claude-code"


class ListedAgent(BaseModel):
    """One entry of `claude agents --json` (only the fields discovery uses)."""

    # built on first use: the listing runs only for records the in-process rule cannot decide
    model_config = ConfigDict(extra="allow", defer_build=True)

    pid: int
    name: str | None = None
    status: str | None = None
    sessionId: str | None = None
    cwd: str | None = None
    kind: str | None = None


class SessionRecord(BaseModel):
    """`$CFG/sessions/<pid>.json` (claude-code.md §1.2). Unknown fields are kept."""

    model_config = ConfigDict(extra="allow")

    pid: int
    sessionId: str | None = None
    cwd: str | None = None
    procStart: str | int | None = None
    version: str | None = None
    kind: str | None = None
    entrypoint: str | None = None
    messagingSocketPath: str | None = None
    name: str | None = None
    nameSource: str | None = None
    status: str | None = None
    waitingFor: str | None = None
    tmux: str | None = None


# -- reply route --------------------------------------------------------------------------------


def reply_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """The route this session's configuration allows (agents.replies picks: the operator's
    `via`, else native, else the relay MCP server, else the turn reply)."""
    from relay_repl.agents.claude_code.replies import claude_route

    return claude_route(target, ctx, native_route)


def native_route(target: Target, ctx: ReplyContext) -> ReplyRoute:
    """A Claude session answers natively: SendMessage to a peer it sees in ListAgents.

    So the operator's inbox must be listed as a Claude peer (register_inbox), and
    the message must reach the session wrapped as a native message naming that
    peer (the claude-code-message transport), or the model has no name to answer.
    """
    from relay_repl.core.plan import ReplyRoute

    if ctx.inbox is None:
        return ReplyRoute(ok=False, how="none", missing=(
            "no inbox is listening here, so an answer would have nowhere to go: ask from the `relay` REPL, "
            "or use `relay send ... --want reply --wait SECONDS`"))
    if not ctx.listed_name:
        return ReplyRoute(ok=False, how="none", offer_register=True, missing=(
            f"no reply route to {target.spec}: it answers with SendMessage to a listed Claude peer, and the operator "
            "inbox is not listed yet; run `await session.register_inbox()` (asks first), or send with want='none'"))
    return ReplyRoute(ok=True, needs_native_reply=True, via="native", how=(
        f"{target.spec} answers with native SendMessage to {ctx.listed_name!r} (this inbox listed as a Claude peer, "
        f"{ctx.listed_socket}) carrying re={ctx.relay_id}; it counts when the connecting pid is {target.spec}'s own "
        f"(pid {target.pid}) holding its registered socket"))


# -- provider ---------------------------------------------------------------------------------


def _pids(listed: list[ListedAgent] | None) -> set[int] | None:
    return None if listed is None else {a.pid for a in listed}


class ClaudeProvider:
    """Discovers Claude Code sessions for one `$CFG`. `await discover()` is cheap to repeat."""

    kind = KIND
    waits_on_listing = True  # a loopless listing runs this provider last (agents/discovery.py)

    def __init__(
        self,
        *,
        config_dir: str | os.PathLike[str] | None = None,
        claude_bin: str | None = None,
        env: Mapping[str, str] | None = None,
        panes: PaneRoster | None = None,
        adapter: AdapterSpec | None = None,
        listing_rule: bool = True,
    ) -> None:
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.adapter = adapter or load_adapter(KIND)
        self._cfg_explicit = config_dir is not None or bool(self.env.get("CLAUDE_CONFIG_DIR"))
        self.config_dir = Path(config_dir) if config_dir is not None else self.adapter.registry.base(self.env)
        self.claude_bin = claude_bin or self.env.get("RELAY_CLAUDE_BIN") or None
        self.panes = panes or PaneRoster(env=self.env)
        self.notes: list[str] = []
        self.listing_ttl = 30.0
        # Claude's listing rule applied here (listing_rule.py) instead of running `claude agents --json`,
        # which still runs where the rule is undecided; False: always the real listing (tests, doctor)
        self.listing_rule = listing_rule
        self._left_out: dict[int, str] = {}
        self._listing_cache: tuple[frozenset[tuple[int, str | None]], float, list[ListedAgent]] | None = None

    def __repr__(self) -> str:
        return f"<ClaudeProvider cfg={self.config_dir}>"

    # -- the listing ---------------------------------------------------------------------
    def _binary(self) -> str | None:
        from relay_repl.agents.claude_code.listing import binary

        return binary(self.env, self.claude_bin)

    async def _run_listing(self, exe: str, env: dict[str, str], timeout: float) -> tuple[int, bytes, bytes]:
        """The listing's exit code and output: a prefetched process (`prefetch.start`) if one
        matches this binary and config dir, else a fresh run."""
        import relay_repl.agents.claude_code.listing as listing
        import relay_repl.system.prefetch as prefetch

        pre = prefetch.take(KIND, listing.key(exe, env))
        if pre is not None:
            return await loopless.to_thread(pre.result, timeout)
        cp = await loopless.run_process(listing.argv(exe), timeout=timeout, env=listing.listing_env(env))
        return cp.returncode, cp.stdout, cp.stderr

    async def list_agents(self) -> tuple[list[ListedAgent] | None, str]:
        """Run `claude agents --json` once. (None, why) when it cannot be used."""
        if not (self.config_dir / "sessions").is_dir():
            # No Claude session ever registered here, so the listing is empty; and running it
            # would not be read-only: a first `claude agents` writes its .claude.json and backups.
            return [], f"no {self.config_dir / 'sessions'}: no Claude session has run here (listing not run)"
        exe = self._binary()
        if exe is None:
            wanted = self.claude_bin or "claude on PATH"
            return None, f"claude binary not found ({wanted})"
        env = dict(self.env)
        if self._cfg_explicit:
            env["CLAUDE_CONFIG_DIR"] = str(self.config_dir)
        timeout = self.adapter.listing.timeout_seconds if self.adapter.listing else 10.0
        try:
            code, stdout, stderr = await self._run_listing(exe, env, timeout)
        except (TimeoutError, subprocess.TimeoutExpired):
            return None, f"`claude agents --json` timed out after {timeout:g}s"
        except OSError as exc:
            return None, f"`claude agents --json` failed to start ({exc.strerror or exc})"
        if code != 0:
            err = stderr.decode("utf-8", "replace").strip().splitlines()
            return None, f"`claude agents --json` exited {code}" + (f": {err[-1][:120]}" if err else "")
        try:
            raw = json.loads(stdout)
            if not isinstance(raw, list):
                raise ValueError("not a JSON list")
            return [ListedAgent.model_validate(x) for x in raw], "claude agents --json"
        except (ValueError, ValidationError) as exc:
            return None, f"`claude agents --json` printed unparseable output ({str(exc).splitlines()[0][:80]})"

    async def _listing(self, records: dict[int, SessionRecord]) -> tuple[list[ListedAgent] | None, str]:
        """The listing, re-run only when it could have changed.

        Membership is what the listing is authoritative for; states and sockets are
        read from the records on every refresh anyway. So while the set of records
        that pass the liveness rule (pid + procStart) is the one the last listing saw,
        and that listing is under `listing_ttl` old, it is reused: a warm refresh
        spawns no process.
        """
        key = frozenset((pid, None if r.procStart is None else str(r.procStart))
                        for pid, r in records.items() if same_process(r.pid, r.procStart)[0])
        cache = self._listing_cache
        now = time.monotonic()
        if cache is not None and cache[0] == key and now - cache[1] < self.listing_ttl:
            return cache[2], f"claude agents --json ({now - cache[1]:.0f}s ago; live records unchanged since)"
        listed, how = await self.list_agents()
        self._listing_cache = (key, now, listed) if listed is not None else None
        return listed, how

    def rule_listing(self) -> RuleListing:
        """Claude's listing rule over the registry files as they are now (`relay doctor` sets it beside
        `claude agents --json`)."""
        from relay_repl.agents.claude_code.listing_rule import apply_rule
        from relay_repl.agents.versions import is_verified

        files: list[tuple[str, bytes | None, str | None]] = []
        self._read_records(files)
        return apply_rule(files, verified=lambda version: is_verified(KIND, version))

    async def _membership(self, records: dict[int, SessionRecord],
                    files: list[tuple[str, bytes | None, str | None]]) -> tuple[set[int] | None, str, str]:
        """Which records Claude lists: its own rule applied to the files read (listing_rule.py), or,
        where that rule is undecided (or switched off), `claude agents --json` itself.
        (listed pids or None, how, source) as `_listing` gives them; `source` names what decided, for the plan."""
        if self.listing_rule:
            from relay_repl.agents.claude_code.listing_rule import apply_rule
            from relay_repl.agents.versions import is_verified

            rule = apply_rule(files, verified=lambda version: is_verified(KIND, version))
            if not rule.undecided:
                how = "claude agents --json's rule over sessions/ (in-process)"
                skipped = {int(f[:-5]): f"Claude skips sessions/{f}: {why}" for f, why in rule.skipped.items()
                           if f[:-5].isdigit() and str(int(f[:-5])) == f[:-5]}
                self._left_out = {**skipped, **rule.left_out}
                return rule.pids, how, how
            first = sorted(rule.undecided.items())[0]
            listed, how = await self._listing(records)
            undecided = f"its rule is undecided on sessions/{first[0]} ({first[1]})"
            return _pids(listed), f"{how}; {undecided}", "claude agents --json"
        listed, how = await self._listing(records)
        return _pids(listed), how, "claude agents --json"

    # -- the registry files ----------------------------------------------------------------
    def _read_records(self, files: list[tuple[str, bytes | None, str | None]] | None = None
                      ) -> tuple[dict[int, SessionRecord], dict[str, str]]:
        """Every `sessions/<digits>.json`: parsed records by pid, and unreadable files with why.
        `files`, when given, receives each one's name and bytes as Claude's listing takes them
        (listing_rule.claude_view), so the rule sees the very bytes relay parsed."""
        from relay_repl.agents.claude_code.listing_rule import RECORD_NAME, claude_view

        sessions = self.config_dir / "sessions"
        records: dict[int, SessionRecord] = {}
        broken: dict[str, str] = {}
        try:
            names = os.listdir(sessions)
        except FileNotFoundError:
            return records, broken
        except OSError as exc:
            broken[str(sessions)] = f"cannot list {sessions} ({exc.strerror})"
            return records, broken
        for fname in names:
            stem, dot, ext = fname.partition(".")
            if ext == "json" and stem.startswith("pid-") and stem[4:].isdigit():
                broken[stem] = self._legacy_record(sessions / fname)
                continue
            if ext != "json" or not stem.isdigit():
                continue
            path = sessions / fname
            sink = files if files is not None and RECORD_NAME.fullmatch(fname) else None  # a file Claude's listing reads
            try:  # the one loader: a FIFO, a directory or a huge file there is a reason, never a hang
                raw = read_bytes(path, "remove it", missing_ok=True, max_bytes=RECORD_MAX_BYTES)
                if raw is None:  # its session ended since the listing of the directory
                    continue
                if sink is not None:  # the same bytes, as Claude's listing would take them (or why it would not)
                    sink.append((fname, *claude_view(str(path), raw)))
                rec = SessionRecord.model_validate(json.loads(raw))
            except FileProblem as exc:
                if sink is not None:
                    sink.append((fname, None, f"unreadable (it {exc.problem})"))
                broken[stem] = unreadable_reason(fname, f"it {exc.problem}")
                continue
            except OSError as exc:
                broken[stem] = unreadable_reason(fname, str(exc.strerror or exc))
                continue
            except ValidationError as exc:
                broken[stem] = invalid_reason(fname, shape_problem(exc, syntax='json')[0][:120])
                continue
            except (ValueError, RecursionError) as exc:
                broken[stem] = invalid_reason(fname, str(exc).splitlines()[0][:80])
                continue
            if str(rec.pid) != stem:
                broken[stem] = f"sessions/{fname} names pid {rec.pid}: a record must be named for its pid; ignoring it"
                continue
            records[rec.pid] = rec
        return records, broken

    @staticmethod
    def _legacy_record(path: Path) -> str:
        """Why an orphaned `sessions/pid-<n>.json` is skipped (records.legacy_reason)."""
        return legacy_reason(path.name)

    # -- targets -------------------------------------------------------------------------------
    def _status(self, rec: SessionRecord) -> str:
        raw = rec.status or ""
        return self.adapter.status.get(raw, "unknown")

    def _common(self, rec: SessionRecord, tp: Path | None) -> dict[str, Any]:
        """The Target fields every kind has, from the record (the transcript `tp` is the evidence file)."""
        return {"socket": rec.messagingSocketPath, "evidence_file": str(tp) if tp else None,
                "proc_start": None if rec.procStart is None else str(rec.procStart)}

    def _detail(self, rec: SessionRecord, tp: Path | None) -> dict[str, Any]:
        return {
            "session_id": rec.sessionId,
            "cwd": rec.cwd,
            "transcript_exists": bool(tp and tp.is_file()),
            "name_source": rec.nameSource,
            "status_raw": rec.status,
            "waiting_for": rec.waitingFor,
            "record_kind": rec.kind,
            "entrypoint": rec.entrypoint,
            "record_tmux": rec.tmux,
            "record": str(self.config_dir / "sessions" / f"{rec.pid}.json"),
        }

    async def discover(self) -> list[Target]:
        """Live sessions (listed and kernel-checked) plus stale records, each with its evidence."""
        if not self.config_dir.is_dir():
            self.notes = [f"{self.config_dir} does not exist"]
            return []
        # Files first, then the listing: a session that starts in between shows up in
        # the listing and its record is read on demand below.
        files: list[tuple[str, bytes | None, str | None]] = []
        records, broken = self._read_records(files)
        listed, how, decided_by = await self._membership(records, files)
        listing_ok = listed is not None
        self.notes = [how]
        listed_pids = listed or set()
        for pid in listed_pids - set(records):
            try:
                records[pid] = self._record(pid)
                broken.pop(str(pid), None)
            except FileProblem as exc:
                broken.setdefault(str(pid), f"sessions/{pid}.json unreadable for a listed session (it {exc.problem}); refresh")
            except (ValueError, ValidationError) as exc:
                broken.setdefault(str(pid), f"sessions/{pid}.json unreadable for a listed session ({type(exc).__name__}); refresh")

        by_pane_pid = await self.panes.by_pane_pid()
        targets: list[Target] = []
        for pid in sorted(records):
            rec = records[pid]
            live, why = same_process(rec.pid, rec.procStart)
            tp = transcript_path(self.config_dir, rec.cwd, rec.sessionId)  # once per record: both below use it
            detail = self._detail(rec, tp)
            common = self._common(rec, tp)
            name = rec.name or str(rec.pid)
            rel = f"sessions/{rec.pid}.json"
            if listing_ok and live and pid not in listed_pids:
                live, why = False, (f"{why}, but `claude agents --json` does not list it (started or exited during the "
                                    "refresh?); refresh" if decided_by == "claude agents --json" else
                                    f"{why}, but `claude agents --json` would not list it: "
                                    f"{self._left_out.get(pid, 'its rule leaves this file out')}")
            if not live:
                targets.append(Target(kind=KIND, prefix=self.adapter.prefix, name=name, address=rec.messagingSocketPath or "", pid=rec.pid,
                                      live=False, state="unknown", pane=None, transports=(), stale_reason=why, **common,
                                      identified_by=f"{rel}: stale, {why}", detail=ClaudeDetail(**detail),
                                      client_version=rec.version, client_status=version_status(KIND, rec.version)))
                continue
            transports, pane = ways_and_pane(rec.messagingSocketPath, rec.pid, by_pane_pid, detail, common)
            state = self._status(rec)
            source = decided_by if listing_ok else f"registry files only ({how})"
            targets.append(Target(
                kind=KIND, prefix=self.adapter.prefix, name=name, address=rec.messagingSocketPath or "", pid=rec.pid, live=True,
                state=state,
                pane=pane.pane_id if pane else None, transports=tuple(transports),
                identified_by=f"{source} + {rel} ({why})" + (f"; pane {pane.pane_id} has pane_pid {rec.pid}" if pane else ""),
                detail=ClaudeDetail(**detail), client_version=rec.version, **common,
                client_status=version_status(KIND, rec.version),
            ))
        for stem, why in sorted(broken.items()):
            stale_pid = int(stem) if stem.isdigit() else None
            targets.append(Target(kind=KIND, prefix=self.adapter.prefix, name=stem, address="", pid=stale_pid, live=False, state="unknown",
                                  identified_by=f"unreadable registry record: {why}", stale_reason=why,
                                  detail=ClaudeDetail(unreadable=True)))
        return targets

    # -- who sent an inbound message (origin verdicts) ---------------------------------------------
    def _record(self, pid: int | str) -> SessionRecord:
        """`sessions/<pid>.json` through the one loader, bounded by RECORD_MAX_BYTES: a FIFO,
        directory or huge file planted there is a FileProblem, never a read that blocks relay."""
        raw = read_bytes(self.config_dir / "sessions" / f"{pid}.json", "remove it", max_bytes=RECORD_MAX_BYTES)
        return SessionRecord.model_validate(json.loads(raw or b""))

    def _live_record(self, pid: int) -> SessionRecord | None:
        try:
            rec = self._record(pid)
        except (FileProblem, ValueError, ValidationError):
            return None
        return rec if rec.pid == pid and same_process(pid, rec.procStart)[0] else None

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        """The Claude session process `pid` is, or None (read-only: nothing connects).

        A session is a `sessions/<pid>.json` whose procStart matches the running pid
        AND whose messagingSocketPath that very pid holds as a listening socket: a
        record alone proves only "a same-uid process wrote a file" (CC §4.5), and an
        injector's pid never owned a session socket (seed §8).
        """
        if not os.path.lexists(f"{self.config_dir}/sessions/{pid}.json"):
            return None  # no record by that name (outside.py's rule): not read, nor parsed, nor a problem raised
        rec = self._live_record(pid)
        if rec is None or not rec.messagingSocketPath:
            return None
        if not owns_listening_socket(pid, rec.messagingSocketPath):
            return None
        name = rec.name or str(pid)
        spec = f"{self.adapter.prefix or KIND}:{name}"
        from relay_repl.core.inbound import PeerIdentity

        return PeerIdentity(
            kind=KIND, spec=spec, pid=pid,
            claimable=frozenset({name, rec.messagingSocketPath, str(pid)}),
            evidence=(f"sessions/{pid}.json procStart {rec.procStart} matches pid {pid}, which holds its "
                      f"listening socket {rec.messagingSocketPath}"),
        )

    def claimed_session(self, address: str) -> str | None:
        """The live session a claimed address names (its name or socket), or None."""
        sessions = self.config_dir / "sessions"
        try:
            names = os.listdir(sessions)
        except OSError:
            return None
        for fname in names:
            stem, _, ext = fname.partition(".")
            if ext != "json" or not stem.isdigit():
                continue
            rec = self._live_record(int(stem))
            if rec is not None and address in {rec.name, rec.messagingSocketPath}:
                return f"{self.adapter.prefix or KIND}:{rec.name or rec.pid}"
        return None

    # -- own address (seed §1) --------------------------------------------------------------------
    def own_address(self) -> Me | None:
        """This process's address if it runs inside a Claude session, else None.

        The inbox is `$CLAUDE_CODE_MESSAGING_SOCKET`; the name comes from our session's
        record (`$CLAUDE_PID`), checked with the same liveness rule.
        """
        from relay_repl.agents.claude_code.own import session_env

        found = session_env(self.env)
        if found is None:
            return None
        sock, pid = found
        try:
            rec = self._record(pid)
        except (FileProblem, ValueError, ValidationError):
            return None
        if not same_process(rec.pid, rec.procStart)[0] or not rec.name:
            return None
        return Me(role="agent", agent=KIND, address=rec.name, inbox=sock)
