"""Codex's negative ancestry rule: "no process of this chain hosts a Codex thread", from /proc and
the registry alone (standard library, system/proc.py and store/adapter_files.py).

Loaded by file (entry-point group `relay_repl.surely_outside`, session/core/outside.py) before the
agents package, which imports pydantic and every kind: an operator's command that refuses to run
inside an agent session (`relay serve --stdio`, `relay approve`, ...) and a `relay ask` from a shell
no agent started pay ~120 ms for the full judge only to hear "no session" (issue 33).

A host is what `CodexProvider.identify_process` counts as one (codex.md sections 0 and 2.2): the
holder of a `thread-writer-locks/<T>.lock` flock, or the daemon named by `daemon.pid`. This rule
answers True only where that judge would find neither for any pid of the chain, by the same reads:
the pid's own fdinfo, else /proc/locks matched against the lock files; any lock of a `.lock` file,
a holder it cannot see alive, or a table it cannot read, and it cannot exclude (False): the full
judge decides. It never says a process IS inside a thread."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from relay_repl.store.adapter_files import registry_path
from relay_repl.system.proc import PROC, file_key, flocked_files, lock_holders, pid_alive, read_proc_locks

KIND = "codex"  # this package's kind, as agent.py names it (this module is loaded without the package)


def read_daemon_pid(path: Path) -> tuple[int | None, str | None]:
    """(pid, startTicks) from `app-server-daemon/daemon.pid`, or (None, None)."""
    try:
        d = json.loads(path.read_text())
        pid = int(d["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, None
    ticks = (d.get("processIdentity") or {}).get("startTicks")
    return pid, None if ticks is None else str(ticks)


def lock_name(link: str) -> bool:
    """The descriptors worth reading for a thread's writer lock (by the path they link to)."""
    return link.endswith(".lock")


def surely_outside(chain: Sequence[int], environ: Mapping[str, str], proc: Path = PROC) -> bool:
    """True when no pid of `chain` can be a Codex host under `environ`'s CODEX_HOME; False when the
    full judge must look (one might be, or this could not tell)."""
    daemon = registry_path(KIND, "daemon_pid", environ)
    locks_dir = registry_path(KIND, "locks_dir", environ)
    if daemon is None or locks_dir is None:
        return False
    dpid, _ticks = read_daemon_pid(Path(daemon))
    if dpid is not None and dpid in chain:
        return False
    lock_files: list[str] | None = None
    for pid in chain:
        mine = flocked_files(pid, name_ok=lock_name, proc=proc)
        if mine is not None and not mine:
            continue  # holds no lock at all
        if lock_files is None:
            try:
                lock_files = [os.path.join(locks_dir, f) for f in os.listdir(locks_dir) if f.endswith(".lock")]
            except FileNotFoundError:
                lock_files = []
            except OSError:
                return False
        if mine is not None:
            if any(file_key(p) in mine for p in lock_files):
                return False
            continue
        if lock_files and not _none_held_by(pid, lock_files, proc):
            return False
    return True


def _none_held_by(pid: int, lock_files: list[str], proc: Path) -> bool:
    """For a pid whose descriptors are hidden from us: /proc/locks shows it holds none of
    `lock_files`, and every holder it names is alive (a dead or unseen one is asked of fuser by the
    full judge: here, cannot tell)."""
    table = read_proc_locks(proc)
    if table is None:
        return False
    for path in lock_files:
        holders = lock_holders(table, path)
        if pid in holders or (holders and not any(pid_alive(h, proc) for h in holders)):
            return False
    return True
