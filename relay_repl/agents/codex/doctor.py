"""`relay doctor` rows for Codex: CODEX_HOME, session_index.jsonl, queue_1.sqlite, the daemon, the sandbox."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from relay_repl.agents.codex.agent import BINARY
from relay_repl.agents.codex.provider import CodexProvider, DaemonError, daemon_thread_status
from relay_repl.agents.codex.queue_ops import BINARY_ENV, QUEUE_FILE
from relay_repl.agents.codex.sqlite_home import sqlite_home
from relay_repl.core.check import Check
from relay_repl.core.errors import FileProblem
from relay_repl.store.loader import read_bytes
from relay_repl.store.sqlite_read import connect_read_only

INDEX_MAX_BYTES = 256 * 1024 * 1024  # one short line per rename: far more than any real index


def check_codex_databases(home: Path, env: Mapping[str, str]) -> Check:
    """Where Codex keeps its SQLite databases (sqlite_home / $CODEX_SQLITE_HOME / CODEX_HOME), and
    whether a stale copy left in CODEX_HOME could be read instead of the live one."""
    sq = sqlite_home(home, env)
    name = "Codex databases"
    if sq.problem:
        return Check(name=name, ok=False, detail=f"{sq.problem}; relay reads them in {sq.path} ({sq.source})",
                     fix=f"fix {home / 'config.toml'}: Codex reads sqlite_home there too")
    if sq.path == home:
        return Check(name=name, ok=True, detail=f"in CODEX_HOME ({home})")
    stale = [f for f in ("state_5.sqlite", "goals_1.sqlite", QUEUE_FILE) if (home / f).exists()]
    moved = f"in {sq.path} ({sq.source}); relay reads them there"
    if stale:
        return Check(name=name, ok=True, detail=f"{moved}; {', '.join(stale)} in {home} are not the live ones "
                     "(left from before the move) and are not read")
    return Check(name=name, ok=True, detail=moved)


async def check_codex(env: Mapping[str, str] | None = None) -> list[Check]:
    """CODEX_HOME, its session index, the queue database, the daemon, and the sandbox (read-only)."""
    environ = os.environ if env is None else env
    p = CodexProvider(env=environ)
    home = p.home
    out: list[Check] = []
    if not home.is_dir():
        if not environ.get(BINARY_ENV) and shutil.which(BINARY, path=environ.get("PATH")) is None:
            return [Check.skip("CODEX_HOME", f"codex not found, and no {home}: no Codex here")]
        fix = "start Codex once, or set CODEX_HOME to the directory it uses"
        return [Check(name="CODEX_HOME", ok=False, detail=f"looked for {home}: it does not exist", fix=fix)]
    out.append(Check(name="CODEX_HOME", ok=True, detail=f"found {home} ({'from $CODEX_HOME' if environ.get('CODEX_HOME') else 'the default'})"))
    index = p._p("session_index")
    try:  # the one loader: a FIFO or a directory there is a finding, never a hang
        data = read_bytes(index, f"run relay as the user who owns {home}, or move it aside", missing_ok=True,
                          max_bytes=INDEX_MAX_BYTES)
    except FileProblem as exc:
        out.append(Check(name="session_index.jsonl", ok=False, detail=f"read {exc.path}: {exc.problem}", fix=exc.fix))
    else:
        if data is None:
            out.append(Check.skip("session_index.jsonl", f"no {index} yet (Codex writes it when a thread is named)"))
        else:
            lines = data.count(b"\n")
            out.append(Check(name="session_index.jsonl", ok=True, detail=f"read {index}: {lines} line(s)"))
    out.append(check_codex_databases(home, environ))
    queue = sqlite_home(home, environ).path / QUEUE_FILE
    if not queue.exists():
        out.append(Check.skip("queue_1.sqlite", f"no {queue} yet (the first `codex queue` creates it)"))
    else:
        try:
            con = connect_read_only(queue)
            try:
                (n,) = con.execute("SELECT COUNT(*) FROM queued_items").fetchone()
            finally:
                con.close()
            out.append(Check(name="queue_1.sqlite", ok=True, detail=f"read {queue} (read-only): {n} queued item(s)"))
        except sqlite3.Error as exc:
            out.append(Check(name="queue_1.sqlite", ok=False, detail=f"read {queue} (read-only): {exc}",
                             fix="check its permissions; Codex 0.169.0 keeps the table `queued_items` there"))
    sock = p._p("control_socket")
    if not os.path.exists(sock):
        out.append(Check(name="Codex daemon", ok=False, detail=f"looked for its control socket {sock}: none",
                         fix="start a Codex TUI (it starts the daemon) or run `codex app-server daemon start`"))
    else:
        try:
            loaded, _ = await daemon_thread_status(sock, [], timeout=5.0)
            out.append(Check(name="Codex daemon", ok=True, detail=f"asked {sock} for thread status: {len(loaded)} thread(s) "
                                                                 "loaded"))
        except DaemonError as exc:
            out.append(Check(name="Codex daemon", ok=False, detail=f"asked {sock} for thread status: no answer ({exc})",
                             fix="restart it: `codex app-server daemon start` (attached TUIs reconnect)"))
    out.append(check_codex_sandbox(home))
    return out


def check_codex_sandbox(home: Path) -> Check:
    """Can a Codex agent run `relay reply`? It connects to a Unix socket, which the
    workspace-write and read-only sandboxes refuse (EPERM, measured in the lab)."""
    from relay_repl.core.file_shape import toml_table
    from relay_repl.store.loader import read_text

    name = "Codex sandbox allows `relay reply`"
    cfg = home / "config.toml"
    try:  # the client's file, through the one loader: not UTF-8, a FIFO, a directory: a finding
        text = read_text(cfg, f"fix {cfg} (Codex cannot read it either)", missing_ok=True)
        mode = toml_table(text, cfg, f"fix {cfg} (Codex cannot read it either)").get("sandbox_mode") if text else None
    except FileProblem as exc:
        return Check(name=name, ok=False, detail=f"read {exc.path}: {exc.problem}" + (f" (line {exc.line})" if exc.line else ""),
                     fix=exc.fix)
    if mode == "danger-full-access":
        return Check(name=name, ok=True, detail=f"read {cfg}: sandbox_mode = {mode!r}, Unix sockets are allowed")
    shown = repr(mode) if mode else "not set (Codex defaults to a sandbox)"
    where = f"read {cfg}" if cfg.exists() else f"no {cfg}"
    return Check(name=name, ok=False, detail=f"{where}: sandbox_mode {shown}: the sandbox refuses Unix sockets, so an "
                 "agent's `relay reply` cannot reach your inbox",
                 fix=f"for agents that must answer, set sandbox_mode = \"danger-full-access\" in {cfg} "
                     "(weigh the risk), or ask them for replies through another path")
