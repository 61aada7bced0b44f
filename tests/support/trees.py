"""Snapshots of directory trees, to prove a command created, changed and deleted nothing.

A snapshot maps every path under the roots (directories included) to its type, size, mode,
inode, mtime and ctime, and for a regular file of at most `HASH_LIMIT` bytes its sha256.
Why ctime too: no writer can set it back (utime(2) sets mtime, and changes ctime), so a
file whose content changed cannot keep its old stat; a larger file (the lab's 400 MB Codex
daemon copy) is compared by stat alone, which that makes sound. A directory's mtime changes
when an entry is created or removed in it, so a file made and deleted again by the command
(a -wal left for a moment) still shows.

Contents are hashed in a CHILD process, never here: reading a database file (or its -wal
or -shm) with open()/close() drops every POSIX lock this process's SQLite connections hold
on it (SQLite's "how to corrupt" list, 2.2), and a test process may still hold the shared
lab's ledger open; another process then re-initialises the WAL index under it, and the
ledger is corrupted ("database disk image is malformed" in a later test).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

HASH_LIMIT = 4 * 1024 * 1024

Entry = tuple[str, int, int, int, int, int, str | None]
Tree = dict[str, Entry]


_HASHER = """
import hashlib, json, sys
out = {}
for p in json.load(sys.stdin):
    try:
        with open(p, "rb") as f:
            out[p] = hashlib.sha256(f.read()).hexdigest()
    except OSError as exc:  # a socket, a file that went away, no permission: say so, comparably
        out[p] = "unreadable: " + (exc.strerror or str(exc))
json.dump(out, sys.stdout)
"""


def _sha256_many(paths: list[str]) -> dict[str, str]:
    """sha256 of each file, read by a child process (see the module docstring for why)."""
    if not paths:
        return {}
    done = subprocess.run([sys.executable, "-c", _HASHER], input=json.dumps(paths), capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def snapshot(roots: Iterable[Path]) -> Tree:
    out: Tree = {}
    to_hash: list[str] = []
    for root in roots:
        if not os.path.lexists(root):
            out[str(root)] = ("absent", 0, 0, 0, 0, 0, None)
            continue
        stack = [Path(root)]
        while stack:
            p = stack.pop()
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            kind = ("dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode)
                    else "link" if stat.S_ISLNK(st.st_mode) else "sock" if stat.S_ISSOCK(st.st_mode) else "other")
            digest = None
            if kind == "file" and st.st_size <= HASH_LIMIT:
                to_hash.append(str(p))
            elif kind == "link":
                digest = os.readlink(p)
            out[str(p)] = (kind, st.st_size if kind != "dir" else 0, st.st_mode, st.st_ino, st.st_mtime_ns,
                           st.st_ctime_ns, digest)
            if kind == "dir":
                try:
                    stack.extend(sorted(p.iterdir()))
                except OSError:
                    continue
    for path, digest in _sha256_many(to_hash).items():
        out[path] = (*out[path][:6], digest)
    return out


FIELDS = ("type", "size", "mode", "inode", "mtime", "ctime", "content")
ANY = "*"


def nothing_allowed(path: str) -> Collection[str]:
    return ()


def differences(before: Tree, after: Tree, allowed: Callable[[str], Collection[str]] = nothing_allowed) -> list[str]:
    """One line per path created, deleted or changed (and how). `allowed(path)` names the
    fields that may differ for that path (ANY: the path is not compared at all); the
    default allows nothing."""
    lines = []
    for path in sorted(before.keys() | after.keys()):
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        ok = allowed(path)
        if ANY in ok:
            continue
        if a is None:
            lines.append(f"created {path}")
        elif b is None:
            lines.append(f"deleted {path}")
        else:
            what = [name for name, x, y in zip(FIELDS, a, b) if x != y]
            if set(what) - set(ok):
                lines.append(f"changed {path} ({', '.join(what)})")
    return lines
