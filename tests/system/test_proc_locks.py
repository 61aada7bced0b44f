"""/proc/locks read whole and right while other processes take and drop locks (real flocks, the
real kernel table): a lock held throughout is never missing from `read_proc_locks`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import os

from relay_repl.system.proc import PROC, file_key, flocked_files, lock_holders, read_in_chunks, read_proc_locks

HOLD = textwrap.dedent("""
    import fcntl, sys
    files = [open(p, "w") for p in sys.argv[1:]]
    for f in files:
        fcntl.flock(f, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
""")

CHURN = textwrap.dedent("""
    import fcntl, sys
    files = [open(p, "w") for p in sys.argv[1:]]
    print("churning", flush=True)
    while True:
        for f in files:
            fcntl.flock(f, fcntl.LOCK_EX)
        for f in files:
            fcntl.flock(f, fcntl.LOCK_UN)
""")


def _start(script: str, paths: list[Path]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", script, *map(str, paths)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() in ("held", "churning")
    return proc


def test_locks_held_throughout_are_in_every_read_while_others_churn(tmp_path):
    """One read(2) of /proc/locks returns at most a page; the next resumes by position, so a lock
    dropped in between used to hide a later one that was held all along (issue 17: 74 of 3,000
    reads with 121 lines; a Codex daemon's writer lock went missing and its reply was judged
    "mismatch"). Two processes hold 80 locks each (the table is longer than one read), two more
    churn 20 locks each, and each of the 160 held locks must be in every one of 300 reads."""
    held = [[tmp_path / f"held-{n}-{i}" for i in range(80)] for n in range(2)]
    procs = [_start(HOLD, paths) for paths in held]
    try:
        procs += [_start(CHURN, [tmp_path / f"churn-{n}-{i}" for i in range(20)]) for n in range(2)]
        if read_in_chunks(PROC / "locks")[1] < 2:
            pytest.skip("/proc/locks fits one read(2) here (a large page size): nothing to race")
        missing = 0
        deadline = time.monotonic() + 60
        for _ in range(300):
            table = read_proc_locks()
            assert table is not None
            missing += sum(p.pid not in lock_holders(table, path)
                           for p, paths in zip(procs, held, strict=False) for path in paths)
            assert time.monotonic() < deadline, "reading /proc/locks 300 times took over 60 s"
        assert missing == 0, f"held locks went missing {missing} times in 300 reads of /proc/locks"
    finally:
        for p in procs:
            p.kill()
            p.wait()


OPEN_SOME = textwrap.dedent("""
    import fcntl, sys
    files = [open(p, "w") for p in sys.argv[1:]]
    for f in files[:-1]:
        fcntl.flock(f, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.readline()
    fcntl.flock(files[0], fcntl.LOCK_UN)
    print("held", flush=True)
    sys.stdin.read()
""")


def test_flocked_files_are_the_locks_one_process_holds_now(tmp_path):
    """flocked_files reads the process's own descriptors: every file it holds a flock on, not one it
    only has open, nobody else's; a lock it released is gone at the next read, a process that
    exited holds nothing."""
    a, b, c = tmp_path / "a.lock", tmp_path / "b.lock", tmp_path / "c.lock"
    other = _start(HOLD, [tmp_path / "other.lock"])
    p = _start(OPEN_SOME, [a, b, c])  # holds a and b, has c open unlocked
    try:
        assert flocked_files(p.pid) == {file_key(a), file_key(b)}
        assert flocked_files(p.pid, name_ok=lambda link: link.endswith("b.lock")) == {file_key(b)}
        assert flocked_files(p.pid, want=file_key(a)) == {file_key(a)}  # found first: b's fdinfo is not read
        assert flocked_files(p.pid, want=file_key(c)) == {file_key(a), file_key(b)}  # open, not held: all read
        assert flocked_files(os.getpid()) == set()
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write("release a\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "held"
        assert flocked_files(p.pid) == {file_key(b)}
    finally:
        for q in (p, other):
            q.kill()
            q.wait()
    assert flocked_files(p.pid) == set()


def test_whether_fdinfo_lists_locks_is_seen_not_assumed(monkeypatch):
    """The probe takes a flock on an anonymous memfd and reads our own fdinfo: true on this kernel;
    where it cannot tell (no memfd), flocked_files answers None and callers read /proc/locks."""
    import relay_repl.system.proc as proc

    assert proc._probe_fd_locks() is True
    monkeypatch.setattr(proc, "_FDINFO_LOCKS", [])
    monkeypatch.delattr(os, "memfd_create")
    assert proc._kernel_lists_fd_locks() is False and flocked_files(os.getpid()) is None


def test_flocked_files_reads_first_the_descriptor_the_asked_lock_was_held_through(tmp_path):
    """Asked about one lock (`want`) of a process with many descriptors (a Codex daemon, every send),
    the read starts at the descriptor it was held through last time (issue 33); the answer is read
    now all the same: released, it is not held, and every descriptor is read again."""
    files = [tmp_path / f"f{i}.log" for i in range(40)]
    lock = tmp_path / "t.lock"
    p = _start(OPEN_SOME, [*files, lock, tmp_path / "open-only"])  # holds the 40 files' locks and t.lock
    read: list[str] = []

    def seen(link: str) -> bool:
        read.append(link)
        return link.endswith(".lock")

    try:
        assert file_key(lock) in flocked_files(p.pid, name_ok=seen, want=file_key(lock))
        first = len(read)
        read.clear()
        assert flocked_files(p.pid, name_ok=seen, want=file_key(lock)) == {file_key(lock)}
        assert first > 40 and len(read) == 1, (first, read)
    finally:
        p.kill()
        p.wait()
    read.clear()
    assert flocked_files(p.pid, name_ok=seen, want=file_key(lock)) == set()  # gone: holds nothing
