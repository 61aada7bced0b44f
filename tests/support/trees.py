"""Snapshots of directory trees, to prove a command created, changed and deleted nothing.

A snapshot maps every path under the roots (directories included) to its type, size, mode,
inode, mtime and ctime, and for a regular file of at most `HASH_LIMIT` bytes its sha256.
Why ctime too: no writer can set it back (utime(2) sets mtime, and changes ctime), so a
file whose content changed cannot keep its old stat; a larger file (the lab's 400 MB Codex
daemon copy) is compared by stat alone, which that makes sound. A directory's mtime changes
when an entry is created or removed in it, so a file made and deleted again by the command
(a -wal left for a moment) still shows.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

HASH_LIMIT = 4 * 1024 * 1024

Entry = tuple[str, int, int, int, int, int, str | None]
Tree = dict[str, Entry]


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:  # a socket, a file that went away, no permission: say so, comparably
        return f"unreadable: {exc.strerror}"


def snapshot(roots: Iterable[Path]) -> Tree:
    out: Tree = {}
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
                digest = _sha256(p)
            elif kind == "link":
                digest = os.readlink(p)
            out[str(p)] = (kind, st.st_size if kind != "dir" else 0, st.st_mode, st.st_ino, st.st_mtime_ns,
                           st.st_ctime_ns, digest)
            if kind == "dir":
                try:
                    stack.extend(sorted(p.iterdir()))
                except OSError:
                    continue
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
