"""Map processes to tmux panes, and read panes, without ever typing into one.

Why: the seed forbids tmux delivery to a session with no *rostered* pane. A pane is
rostered for pid P only when tmux itself says `#{pane_pid} == P` (or, for Codex, an
ancestor of the TUI process); the `tmux` field Claude writes in its registry is
inherited by child claude processes and so cannot be trusted (claude-code.md §3.3).

Which tmux servers are searched, in order (duplicates by socket path dropped):
1. `$RELAY_TMUX_SOCKET`: a socket *name* as for `tmux -L` (the lab sets it);
2. the server of `$TMUX` (first comma field is its socket path);
3. the default server (`$TMUX_TMPDIR` or /tmp, `tmux-<uid>/default`).
A server whose socket file does not exist is skipped without spawning tmux.

One `tmux list-panes -a` per server per refresh, and at most one more tmux call per
server to capture any number of panes (marker lines separate the captures). This
module only reads: no send-keys, no copy-mode changes, no resize.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from relay_repl.core.errors import TmuxError
from relay_repl.system import loopless
from relay_repl.system.tmux import arun, tmux_binary
from relay_repl.system.proc import ProcStat, process_table

from relay_repl.system.pane_list import (PANE_FIELDS, PANE_FORMAT, SEP, capture_args, pane_rows, server_paths, split_captures,
                                         tmux_dir)

__all__ = ["PANE_FIELDS", "PANE_FORMAT", "SEP", "Pane", "PaneRoster", "TmuxServer", "list_panes", "parse_panes", "split_captures", "tmux_servers"]


@dataclass(frozen=True, slots=True)
class TmuxServer:
    """One tmux server, addressed by its socket path (`tmux -S path`)."""

    socket_path: str
    label: str  # how it was found: "RELAY_TMUX_SOCKET=lab", "$TMUX", "default"

    @property
    def args(self) -> tuple[str, ...]:
        return ("-S", self.socket_path)


@dataclass(frozen=True, slots=True)
class Pane:
    """A pane as tmux reports it; `server` says which tmux to talk to."""

    server: TmuxServer
    pane_id: str
    pane_pid: int
    current_command: str
    session_name: str
    window_id: str
    in_mode: bool
    mode: str
    dead: bool
    alternate_on: bool
    cursor_x: int
    cursor_y: int

    @property
    def key(self) -> tuple[str, str]:
        return self.server.socket_path, self.pane_id

    def target_fields(self) -> dict[str, str | None]:
        """What a Target records so a transport can reach the same pane (its tmux server)."""
        return {"tmux_socket": self.server.socket_path, "tmux_server": self.server.label}

    def detail_fields(self) -> dict[str, str | None]:
        """What a kind's detail (core.target.PaneDetail) records about the pane."""
        return {"tmux_session": self.session_name, "pane_current_command": self.current_command}


def _tmux_dir(env: Mapping[str, str]) -> Path:
    return Path(tmux_dir(env))


def tmux_servers(env: Mapping[str, str] | None = None) -> list[TmuxServer]:
    """The servers to search, from the environment (see module doc; pane_list.server_paths). Pure."""
    return [TmuxServer(path, label) for path, label in server_paths(os.environ if env is None else env)]


def parse_panes(server: TmuxServer, text: str) -> list[Pane]:
    """Parse `list-panes -F PANE_FORMAT` output. Pure; malformed lines are skipped."""
    panes: list[Pane] = []
    for f in pane_rows(text):
        try:
            panes.append(
                Pane(
                    server=server,
                    pane_id=f["pane_id"],
                    pane_pid=int(f["pane_pid"]),
                    current_command=f["pane_current_command"],
                    session_name=f["session_name"],
                    window_id=f["window_id"],
                    in_mode=f["pane_in_mode"] == "1",
                    mode=f["pane_mode"],
                    dead=f["pane_dead"] == "1",
                    alternate_on=f["alternate_on"] == "1",
                    cursor_x=int(f["cursor_x"] or 0),
                    cursor_y=int(f["cursor_y"] or 0),
                )
            )
        except ValueError:
            continue
    return panes


async def _run_tmux(server: TmuxServer, args: Sequence[str], env: Mapping[str, str]) -> str | None:
    """One tmux command against `server` through the one runner; None on any failure
    (no tmux, no server, timeout): discovery reads what it can."""
    try:
        res = await arun(server.args, *args, env=env)
    except TmuxError:
        return None
    return res.text if res.ok else None


async def list_panes(servers: Sequence[TmuxServer], env: Mapping[str, str] | None = None) -> list[Pane]:
    """Every pane of every reachable server (servers without a socket file are skipped)."""
    env = dict(os.environ if env is None else env)
    if tmux_binary(env) is None:
        return []
    panes: list[Pane] = []
    for server in servers:
        if not os.path.exists(server.socket_path):
            continue
        out = await _run_tmux(server, ["list-panes", "-a", "-F", PANE_FORMAT], env)
        if out is not None:
            panes.extend(parse_panes(server, out))
    return panes


async def capture_panes(panes: Sequence[Pane], env: Mapping[str, str] | None = None,
                        history: int = 0) -> dict[tuple[str, str], str]:
    """The visible text of each pane (plus `history` lines above), keyed by `Pane.key`.

    One tmux process per server: `display-message -p MARK #{pane_id} ; capture-pane -p -J -t …`
    chained with `;`. Wrapped lines are joined (-J) so a long footer stays one line.
    Capture is read-only; a pane that vanished is simply missing from the result.
    """
    env = dict(os.environ if env is None else env)
    result: dict[tuple[str, str], str] = {}
    if tmux_binary(env) is None or not panes:
        return result
    by_server: dict[str, list[Pane]] = {}
    for p in panes:
        by_server.setdefault(p.server.socket_path, []).append(p)
    for group in by_server.values():
        marker = "relaycap" + secrets.token_hex(6)
        out = await _run_tmux(group[0].server, capture_args([p.pane_id for p in group], marker, history), env)
        if out is None and len(group) > 1:
            # One vanished pane fails the whole chain: retry one by one.
            for p in group:
                result.update(await capture_panes([p], env, history))
            continue
        for pane_id, text in split_captures(out or "", marker).items():
            result[(group[0].server.socket_path, pane_id)] = text
    return result


@dataclass
class PaneRoster:
    """A short-lived cache of panes and the process table, shared by providers.

    Both providers ask "which pane runs pid P" in the same refresh; one tmux call per
    server and one /proc scan serve both. `ttl` keeps a refresh consistent without
    serving stale panes to the next one.
    """

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    ttl: float = 1.0
    servers: list[TmuxServer] | None = None
    _panes: list[Pane] | None = None
    _panes_at: float = 0.0
    _table: dict[int, ProcStat] | None = None
    _table_at: float = 0.0

    def __post_init__(self) -> None:
        if self.servers is None:
            self.servers = tmux_servers(self.env)

    def invalidate(self) -> None:
        self._panes = None
        self._table = None

    async def panes(self) -> list[Pane]:
        now = time.monotonic()
        if self._panes is None or now - self._panes_at > self.ttl:
            self._panes = await list_panes(self.servers or [], self.env)
            self._panes_at = time.monotonic()
        return list(self._panes)

    async def processes(self) -> dict[int, ProcStat]:
        now = time.monotonic()
        if self._table is None or now - self._table_at > self.ttl:
            self._table = await loopless.to_thread(process_table)
            self._table_at = time.monotonic()
        return self._table

    async def by_pane_pid(self) -> dict[int, list[Pane]]:
        """pane_pid → panes (a list: two servers can, in theory, share a pid namespace)."""
        idx: dict[int, list[Pane]] = {}
        for p in await self.panes():
            if not p.dead:
                idx.setdefault(p.pane_pid, []).append(p)
        return idx

    async def capture(self, panes: Sequence[Pane], history: int = 0) -> dict[tuple[str, str], str]:
        return await capture_panes(panes, self.env, history)
