"""Waking when files change: Linux inotify on a directory, through ctypes (no dependency).

Why: `relay watch` and `relay log --follow` show ledger events as they are written by other
processes (a `relay send`, a recipe, a Codex agent's `relay reply`). Polling the ledger every
N ms would either lag (slow poll) or burn the CPU the agents need (fast poll, on a 2-CPU box
beside several clients). SQLite in WAL mode appends each commit to `<db>-wal` (and a checkpoint
writes the main file), so an inotify watch on the ledger's directory wakes the reader exactly
when a commit lands, and the reader then reads only the rows after the last one it showed.

The watch is on the directory, not the files: the -wal is created, truncated and deleted as
writers come and go (and the ledger itself may not exist yet), and a directory watch sees a
file by name whatever happens to its inode. Where inotify is missing (not Linux), `changed`
falls back to comparing the files' stat every `fallback` seconds, said in `how`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from collections.abc import Iterable
from pathlib import Path

IN_MODIFY = 0x00000002
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_MASK = IN_MODIFY | IN_MOVED_TO | IN_CREATE | IN_DELETE
# not IN_CLOSE_WRITE: SQLite opens the -wal read-write even for a read-only connection, so the
# reader's own close would wake it again, for ever
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1, libc.inotify_add_watch  # noqa: B018  (present, or AttributeError)
        return libc
    except (OSError, AttributeError):
        return None


def parse_events(buf: bytes) -> list[tuple[int, str]]:
    """(mask, name) of each `struct inotify_event` in what one read(2) returned."""
    out: list[tuple[int, str]] = []
    i = 0
    while i + _HEADER.size <= len(buf):
        _wd, mask, _cookie, length = _HEADER.unpack_from(buf, i)
        raw = buf[i + _HEADER.size: i + _HEADER.size + length]
        out.append((mask, raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")))
        i += _HEADER.size + length
    return out


class DirWatch:
    """`async with DirWatch(dir, names) as w: while await w.changed(timeout): ...`

    `changed(timeout)` returns True as soon as one of `names` in `directory` was created,
    written, replaced or removed since the last call (every queued event is drained, so a
    burst of commits is one wake-up), False when `timeout` passed with none."""

    def __init__(self, directory: Path | str, names: Iterable[str], *, fallback: float = 0.5) -> None:
        self.directory = Path(directory)
        self.names = frozenset(names)
        self.fallback = fallback
        self._fd = -1
        self._stats: dict[str, tuple[int, int, int] | None] = {}
        self._libc = _libc()
        self._watch()
        if self._fd < 0:
            self._stats = self._stat_all()

    def _watch(self) -> None:
        """Start the inotify watch, if this system has inotify and the directory exists (a fresh
        RELAY_HOME may not yet: until it does, `changed` compares stats, then switches)."""
        libc = self._libc
        if libc is None or not self.directory.is_dir():
            return
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd >= 0:
            if libc.inotify_add_watch(fd, os.fsencode(self.directory), _MASK) >= 0:
                self._fd = fd
            else:
                os.close(fd)

    @property
    def how(self) -> str:
        if self._fd >= 0:
            return "inotify"
        why = "no inotify here" if self._libc is None else f"until {self.directory} exists"
        return f"stat every {self.fallback:g}s ({why})"

    def _stat_all(self) -> dict[str, tuple[int, int, int] | None]:
        out: dict[str, tuple[int, int, int] | None] = {}
        for name in self.names:
            try:
                st = os.stat(self.directory / name)
                out[name] = (st.st_ino, st.st_size, st.st_mtime_ns)
            except OSError:
                out[name] = None
        return out

    def _drain(self) -> bool:
        hit = False
        while True:
            try:
                buf = os.read(self._fd, 65536)
            except BlockingIOError:
                return hit
            if not buf:
                return hit
            hit = hit or any(name in self.names for _mask, name in parse_events(buf))

    async def changed(self, timeout: float) -> bool:
        import anyio

        from anyio.lowlevel import checkpoint

        await checkpoint()  # a wake-up always lets the loop run (the reader draws, keys are read)
        if self._fd < 0:
            from relay_repl.system.polling import poll_until

            async def moved() -> bool | None:
                if self._libc is not None and self.directory.is_dir():
                    self._watch()  # the directory appeared: inotify from now on (the caller reads once now)
                    if self._fd >= 0:
                        return True
                now = self._stat_all()
                if now == self._stats:
                    return None
                self._stats = now
                return True

            return bool(await poll_until(moved, timeout=timeout, interval=self.fallback))
        if self._drain():
            return True
        with anyio.move_on_after(timeout):
            while True:
                await anyio.wait_readable(self._fd)
                if self._drain():
                    return True
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    async def __aenter__(self) -> DirWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
