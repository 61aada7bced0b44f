"""The lab's process chores (finding and ending lab processes) on top of `system.proc`.

Every /proc read and the one liveness rule (pid alive, not a zombie, start time equal)
are `relay_repl.system.proc`'s; this module only adds what the lab needs: which
processes belong to a lab, and how to end them.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from pathlib import Path

from relay_repl.system import proc as sysproc
from relay_repl.system.polling import poll_until_sync


def proc_start(pid: int | None) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks), or None if gone."""
    return sysproc.proc_start(pid) if pid else None


is_alive = sysproc.is_alive
"""`system.proc`'s liveness rule (pid alive, not a zombie, start time equal when given)."""


def all_pids() -> list[int]:
    return sorted(sysproc.process_table())


def children(pid: int) -> list[int]:
    return sysproc.children_map(sysproc.process_table()).get(pid, [])


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (not `pid` itself)."""
    return sysproc.descendants(pid, sysproc.process_table())[1:]


def ancestors(pid: int | None = None) -> set[int]:
    """`pid` (default: this process) and its ancestors."""
    return set(sysproc.ancestors(pid or os.getpid()))


def environ(pid: int) -> dict[str, str]:
    return sysproc.read_environ(pid) or {}


def cmdline(pid: int) -> list[str]:
    return sysproc.read_cmdline(pid) or []


def exe_name(pid: int) -> str:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        args = cmdline(pid)
        return os.path.basename(args[0]) if args else ""


def net_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def lab_processes(lab_dir: Path, home: Path, netns_id: str | None = None,
                  exclude: Iterable[int] = (),
                  client_homes: dict[str, tuple[str, str]] | None = None) -> list[int]:
    """Processes that belong to the lab.

    A process belongs when its HOME is the lab's fake home (every process the lab starts
    has it), or its command line names the lab directory, or it is a `claude`/`codex`
    process whose CLAUDE_CONFIG_DIR/CODEX_HOME is the lab's (`client_homes` maps the
    variable to the program name), or it lives in the lab's private network namespace
    while that namespace is still held by a process found by one of the other rules.

    Why the last condition: a namespace's id (`net:[inode]`) is only unique while the
    namespace exists. Once the lab's last process in it is gone the kernel frees it and
    may give the same id to a namespace another lab (another pytest worker) has just
    made; matching on the id alone then kills that lab's stub server while it starts
    (seen as `LabError: stub server exited with -15` in a soak). A namespace one of our
    own processes is still in cannot have been freed, so the id still means ours.
    The caller and its ancestors are never included, and neither is a shell that merely
    sourced `relay lab env`.
    """
    skip = ancestors() | set(exclude)
    lab, home_s = str(lab_dir), str(home)
    host_ns = net_ns(os.getpid())
    out = []
    by_ns = []
    for pid, st in sorted(sysproc.process_table().items()):
        if pid in skip or st.state in ("Z", "X", "x"):
            continue
        env = environ(pid)
        if env.get("HOME") == home_s:
            out.append(pid)
            continue
        if client_homes and any(env.get(var) == val and _runs(pid, prog)
                                for var, (val, prog) in client_homes.items()):
            out.append(pid)
            continue
        if any(lab == a or a.startswith(lab + "/") or (lab + "/") in a for a in cmdline(pid)):
            out.append(pid)
            continue
        if netns_id and netns_id != host_ns and net_ns(pid) == netns_id:
            by_ns.append(pid)
    if by_ns and any(net_ns(p) == netns_id for p in out):
        out = sorted(out + by_ns)
    return out


def _runs(pid: int, prog: str) -> bool:
    """Whether the process is program `prog` (its exe, or argv[0]/argv[1] for node wrappers)."""
    if exe_name(pid) == prog:
        return True
    return any(os.path.basename(a) == prog for a in cmdline(pid)[:2])


def terminate(pids: Iterable[int], grace: float = 3.0) -> list[int]:
    """SIGTERM, wait up to `grace` s, then SIGKILL what is left. Returns the pids signalled."""
    pids = [p for p in pids if is_alive(p)]
    starts = {p: proc_start(p) for p in pids}
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except OSError:
            pass
    poll_until_sync(lambda: None if any(is_alive(p, starts[p]) for p in pids) else True, timeout=grace, interval=0.05)
    left = [p for p in pids if is_alive(p, starts[p])]
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    poll_until_sync(lambda: None if any(is_alive(p, starts[p]) for p in left) else True, timeout=2.0, interval=0.05)
    return pids


def wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait until every pid has exited; return those still alive at the deadline."""
    starts = {p: proc_start(p) for p in pids}

    def alive() -> list[int]:
        return [p for p, s in starts.items() if s is not None and is_alive(p, s)]

    if poll_until_sync(lambda: None if alive() else True, timeout=timeout, interval=0.05):
        return []
    return alive()
