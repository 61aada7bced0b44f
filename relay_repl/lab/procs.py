"""Small /proc helpers for the lab: liveness, children, finding and ending lab processes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from relay_repl.system.proc import proc_start as _proc_start


def proc_start(pid: int | None) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks), or None if gone."""
    return _proc_start(pid) if pid else None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return st[st.rfind(")") + 2 :].split(" ")


def is_alive(pid: int | None, start: str | None = None) -> bool:
    """True if `pid` runs (not a zombie) and, when given, still has start time `start`."""
    if not pid:
        return False
    fields = _stat_fields(int(pid))
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return start is None or fields[19] == start


def ppid(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def all_pids() -> Iterator[int]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def children(pid: int) -> list[int]:
    return [p for p in all_pids() if ppid(p) == pid]


def descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for p in all_pids():
        pp = ppid(p)
        if pp is not None:
            parents.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        for c in parents.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def ancestors(pid: int | None = None) -> set[int]:
    out, p = set(), pid or os.getpid()
    while p and p not in out:
        out.add(p)
        p = ppid(p) or 0
    return out


def environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


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
    has it), or its command line names the lab directory, or it lives in the lab's
    private network namespace, or it is a `claude`/`codex` process whose
    CLAUDE_CONFIG_DIR/CODEX_HOME is the lab's (`client_homes` maps the variable to the
    program name). The caller and its ancestors are never included, and neither is a
    shell that merely sourced `relay lab env`.
    """
    skip = ancestors() | set(exclude)
    lab, home_s = str(lab_dir), str(home)
    host_ns = net_ns(os.getpid())
    out = []
    for pid in all_pids():
        if pid in skip:
            continue
        fields = _stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):
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
            out.append(pid)
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
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(is_alive(p, starts[p]) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if is_alive(p, starts[p])]
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(is_alive(p, starts[p]) for p in left):
        time.sleep(0.05)
    return pids


def wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait until every pid has exited; return those still alive at the deadline."""
    starts = {p: proc_start(p) for p in pids}
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p, s in starts.items() if s is not None and is_alive(p, s)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)
