"""`relay doctor`: is every layer relay stands on in working order here, and if not, what next.

Why one command: a failed send can stem from any layer (no tmux, an unverified client,
an unreadable registry, a Codex daemon that is down, a halt left in force), and the
error at the top names only the symptom. Each check reads, never writes: the state
directory is tested with access(2), the ledger and the queue are opened read-only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from relay_repl.store.sqlite_read import connect_read_only

from pydantic import BaseModel, ConfigDict


class Check(BaseModel):
    """One check: its name, ✔ or ✘, what was found, and the next step when it failed."""

    model_config = ConfigDict(frozen=True)

    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def render(self) -> str:
        line = f"{'✔' if self.ok else '✘'} {self.name}: {self.detail}"
        return line + (f"\n    next: {self.fix}" if not self.ok and self.fix else "")


class Report(list):
    """The checks in order; prints as one line each (with the next step under a failure)."""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self)

    def __repr__(self) -> str:
        failed = [c for c in self if not c.ok]
        tail = "all checks pass" if not failed else f"{len(failed)} of {len(self)} checks failed"
        return "\n".join([c.render() for c in self] + [tail])


def _ro(path: Path) -> sqlite3.Connection:
    return connect_read_only(path)


def check_tmux() -> Check:
    from relay_repl.core.errors import TmuxError
    from relay_repl.system.tmux import run as run_tmux
    from relay_repl.system.tmux import tmux_binary

    exe = tmux_binary()
    if exe is None:
        return Check(name="tmux", ok=False, detail="not found on PATH",
                     fix="install tmux (e.g. apt-get install tmux); typing into panes needs it")
    try:
        out = run_tmux((), "-V", timeout=10).text.strip()  # the one tmux runner; -V needs no server
    except TmuxError as exc:
        return Check(name="tmux", ok=False, detail=f"{exe} does not answer -V ({exc})", fix="reinstall tmux")
    return Check(name="tmux", ok=True, detail=f"{out or 'unknown version'} at {exe}")


def check_client(kind: str) -> Check:
    from relay_repl.agents.versions import (
        BINARIES,
        NPM_PACKAGES,
        binary_version,
        verified_here,
        verified_version,
        version_status,
    )

    name = f"{kind} client"
    want = verified_version(kind)
    binary = BINARIES[kind]
    exe = shutil.which(binary)
    install = f"npm i -g {NPM_PACKAGES[kind]}@{want}"
    if exe is None:
        return Check(name=name, ok=False, detail=f"`{binary}` not found on PATH",
                     fix=f"install it ({install}) or put its directory on PATH; or use the lab: "
                         f"`relay lab install`, then `relay --lab doctor`")
    have = binary_version(exe)
    if have is None:
        return Check(name=name, ok=False, detail=f"{exe} does not answer --version",
                     fix=f"reinstall it ({install})")
    status = version_status(kind, have)
    if status == "unverified":
        return Check(name=name, ok=False, detail=f"{have} at {exe}: unverified (pinned: {want}; not verified on "
                                                 f"this machine)",
                     fix=f"verify it: `relay fidelity --clients system`; or {install}, or use the lab (`relay --lab`)")
    if status == "verified":
        when = verified_here(kind).get(have, {}).get("when", "?")
        return Check(name=name, ok=True, detail=f"{have} at {exe}: verified locally (on this machine, by relay fidelity "
                                                f"{when}; pinned is {want})")
    return Check(name=name, ok=True, detail=f"{have} at {exe}: pinned (the version relay ships verified)")


async def check_claude() -> list[Check]:
    from relay_repl.agents.claude_code import ClaudeProvider

    p = ClaudeProvider()
    sessions = p.config_dir / "sessions"
    out: list[Check] = []
    if not p.config_dir.is_dir():
        out.append(Check(name="Claude config dir", ok=False, detail=f"{p.config_dir} does not exist",
                         fix="start Claude Code once, or set CLAUDE_CONFIG_DIR to the directory it uses"))
    elif sessions.is_dir() and not os.access(sessions, os.R_OK | os.X_OK):
        out.append(Check(name="Claude config dir", ok=False, detail=f"{sessions} is not readable",
                         fix=f"run relay as the user who owns {sessions}"))
    else:
        n = len(list(sessions.glob("*.json"))) if sessions.is_dir() else 0
        out.append(Check(name="Claude config dir", ok=True,
                         detail=f"{p.config_dir} readable; registry {sessions} holds {n} session record(s)"))
    listed, how = await p.list_agents()
    if listed is None:
        out.append(Check(name="claude agents --json", ok=False, detail=how,
                         fix="fix the Claude client check above; run `claude agents --json` by hand to see why"))
    else:
        out.append(Check(name="claude agents --json", ok=True, detail=f"answers: {len(listed)} live session(s)"))
    return out


async def check_codex() -> list[Check]:
    from relay_repl.agents.codex import CodexProvider, DaemonError, daemon_thread_status

    p = CodexProvider()
    home = p.home
    out: list[Check] = []
    if not home.is_dir():
        fix = "start Codex once, or set CODEX_HOME to the directory it uses"
        return [Check(name="CODEX_HOME", ok=False, detail=f"{home} does not exist", fix=fix)]
    out.append(Check(name="CODEX_HOME", ok=True, detail=f"{home} ({'from $CODEX_HOME' if os.environ.get('CODEX_HOME') else 'the default'})"))
    index = p._p("session_index")
    if not index.exists():
        out.append(Check(name="session_index.jsonl", ok=True, detail="not there yet (Codex writes it when a thread is named)"))
    elif not os.access(index, os.R_OK):
        out.append(Check(name="session_index.jsonl", ok=False, detail=f"{index} is not readable",
                         fix=f"run relay as the user who owns {home}"))
    else:
        lines = sum(1 for _ in index.open("rb"))
        out.append(Check(name="session_index.jsonl", ok=True, detail=f"readable, {lines} line(s)"))
    queue = p._p("queue_db")
    if not queue.exists():
        out.append(Check(name="queue_1.sqlite", ok=True, detail="not there yet (the first `codex queue` creates it)"))
    else:
        try:
            con = _ro(queue)
            try:
                (n,) = con.execute("SELECT COUNT(*) FROM queued_items").fetchone()
            finally:
                con.close()
            out.append(Check(name="queue_1.sqlite", ok=True, detail=f"readable (read-only), {n} queued item(s)"))
        except sqlite3.Error as exc:
            out.append(Check(name="queue_1.sqlite", ok=False, detail=f"{queue}: {exc}",
                             fix="check its permissions; Codex 0.169.0 keeps the table `queued_items` there"))
    sock = p._p("control_socket")
    if not os.path.exists(sock):
        out.append(Check(name="Codex daemon", ok=False, detail=f"no control socket at {sock}",
                         fix="start a Codex TUI (it starts the daemon) or run `codex app-server daemon start`"))
    else:
        try:
            loaded, _ = await daemon_thread_status(sock, [], timeout=5.0)
            out.append(Check(name="Codex daemon", ok=True, detail=f"answers on {sock}: {len(loaded)} thread(s) loaded"))
        except DaemonError as exc:
            out.append(Check(name="Codex daemon", ok=False, detail=f"{sock} does not answer: {exc}",
                             fix="restart it: `codex app-server daemon start` (attached TUIs reconnect)"))
    out.append(check_codex_sandbox(home))
    return out


def check_codex_sandbox(home: Path) -> Check:
    """Can a Codex agent run `relay reply`? It connects to a Unix socket, which the
    workspace-write and read-only sandboxes refuse (EPERM, measured in the lab)."""
    import tomllib

    name = "Codex sandbox allows `relay reply`"
    cfg = home / "config.toml"
    try:
        mode = tomllib.loads(cfg.read_text()).get("sandbox_mode") if cfg.exists() else None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return Check(name=name, ok=False, detail=f"{cfg} unreadable: {exc}", fix=f"fix {cfg}")
    if mode == "danger-full-access":
        return Check(name=name, ok=True, detail=f"sandbox_mode = {mode!r} in {cfg}: Unix sockets are allowed")
    shown = repr(mode) if mode else "not set (Codex defaults to a sandbox)"
    return Check(name=name, ok=False, detail=f"sandbox_mode {shown}: the sandbox refuses Unix sockets, so an "
                 "agent's `relay reply` cannot reach your inbox",
                 fix=f"for agents that must answer, set sandbox_mode = \"danger-full-access\" in {cfg} "
                     "(weigh the risk), or ask them for replies through another path")


def check_state() -> list[Check]:
    import relay_repl.store.paths as paths

    out: list[Check] = []
    state = paths.state_dir(create=False)
    probe = state
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if os.access(probe, os.W_OK | os.X_OK):
        out.append(Check(name="state directory", ok=True,
                         detail=f"{state} writable" + ("" if state.exists() else " (created on first use)")))
    else:
        out.append(Check(name="state directory", ok=False, detail=f"{probe} is not writable",
                         fix="set RELAY_HOME to a directory you own"))
    ledger = paths.ledger_path() if state.exists() else state / "ledger.sqlite"
    if not ledger.exists():
        out.append(Check(name="ledger integrity", ok=True, detail="no ledger yet (created by the first send)"))
        out.append(Check(name="relay-halts", ok=True, detail="none in force"))
        return out
    try:
        con = _ro(ledger)
        try:
            verdict = con.execute("PRAGMA integrity_check").fetchone()[0]
            halts = con.execute("SELECT reason, by FROM halts WHERE cleared IS NULL ORDER BY seq").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        out.append(Check(name="ledger integrity", ok=False, detail=f"{ledger}: {exc}",
                         fix=f"move {ledger} aside (it keeps the history) and let relay start a new one"))
        return out
    out.append(Check(name="ledger integrity", ok=verdict == "ok", detail=f"integrity_check: {verdict} ({ledger})",
                     fix=None if verdict == "ok" else f"move {ledger} aside and let relay start a new one"))
    if halts:
        reason, by = halts[-1]
        out.append(Check(name="relay-halts", ok=False, detail=f"{len(halts)} in force, newest: {reason} (by {by})",
                         fix="nothing is sent until it is cleared: handle the cause, then `session.unhalt()` in the REPL"))
    else:
        out.append(Check(name="relay-halts", ok=True, detail="none in force"))
    return out


async def run_checks() -> Report:
    """Every check, in layer order: system, clients, registries, state."""
    import anyio

    from relay_repl.agents.versions import KINDS

    checks: list[Check] = [await anyio.to_thread.run_sync(check_tmux)]
    for kind in KINDS:
        checks.append(await anyio.to_thread.run_sync(check_client, kind))
    checks += await check_claude()
    checks += await check_codex()
    checks += await anyio.to_thread.run_sync(check_state)
    return Report(checks)
