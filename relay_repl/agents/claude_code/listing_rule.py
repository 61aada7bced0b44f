"""`claude agents --json`'s own rule, applied in-process to the registry files: which sessions it lists.

Why: `relay targets` and `relay send claude:...` waited for the listing, a Node process (~0.17 s
and as much CPU, more on a loaded machine), only to learn which `sessions/<pid>.json` records
Claude itself counts as live; relay reads every record anyway. The rule is small and read from
the pinned binary (2.1.332, `printAgentsJson` and the registry reader it calls), so relay applies
it itself, and runs the real listing only where the two could disagree (`undecided`).

The rule, as Claude Code 2.1.332 applies it (CC §1.6 and the binary):
1. entries of `sessions/` named `^[0-9]+\\.json$`; the pid is the file NAME's number, and a name that
   is not its number's own spelling (a leading zero) is skipped (Claude deletes that file);
2. a file that is not a regular file (lstat: a symlink is not followed), is over 256 KiB, or is
   not JSON is skipped; a field of the wrong type reads as absent;
3. live: pid > 1, `kill(pid, 0)` succeeds (EPERM counts as not), and the recorded start
   (`procStartFt`, else `procStart`, each only when a string) equals field 22 of `/proc/<pid>/stat`
   when that is readable; no recorded start, or an unreadable stat, counts as live. A zombie
   passes (relay's own rule, system/proc.same_process, does not: such a record is stale either way);
4. listed: a live record whose `kind` is `interactive` (or `bg` without a `jobId`), with no
   `parkedJobId`; a `bg` record with a `jobId` is listed through Claude's background-job store,
   which relay does not read: UNDECIDED;
5. printed status: idle → idle, waiting → waiting (with `waitingFor`), busy and shell → busy, an
   unknown or absent status → none.

What relay does not reproduce makes the listing undecided, and the caller runs the real
`claude agents --json` as before: a record it cannot classify (above), and a live record written
by a client version relay has not verified (another version may list by another rule). The
listing's own output is compared with this rule on fixtures and in the lab
(tests/agents/test_claude_listing_rule*.py), and `relay doctor` keeps running the real one.

Standard library only: it is on the cold path of `relay targets`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import namedtuple
from collections.abc import Callable, Iterable

MAX_RECORD_BYTES = 262_144
"""Claude skips a registry file larger than this (its reader's limit, 2.1.332)."""

RECORD_NAME = re.compile(r"[0-9]+\.json")
KINDS = ("interactive", "bg", "daemon", "daemon-worker")
STATUSES = ("busy", "shell", "idle", "waiting")
_MAX_EPOCH = 4_000_000_000_000_000


# Plain tuples and classes, not dataclasses: the prefetch loads this module before its spawn of the
# listing, and dataclasses imports inspect (tests/system/test_prefetch.py keeps that path bare).
RuleRow = namedtuple("RuleRow", "pid kind status waiting_for session_id cwd started_at name")
RuleRow.__doc__ = """One row the rule lists: the fields `claude agents --json` prints for an interactive
session (`name` as the record has it: Claude prints it through a sanitiser relay does not copy)."""


class RuleListing:
    """The rows, the records it could not decide (file name: why), the files it skipped (why), and
    the readable records it leaves out (pid: why)."""

    def __init__(self) -> None:
        self.rows: list[RuleRow] = []
        self.undecided: dict[str, str] = {}
        self.skipped: dict[str, str] = {}
        self.left_out: dict[int, str] = {}

    @property
    def pids(self) -> set[int]:
        return {r.pid for r in self.rows}


def _skipped_by_lstat(path: str) -> str | None:
    """Why Claude's reader skips `path` (lstat: not a regular file, or over its limit), or None."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (Claude does not follow a symlink here)"
    if st.st_size > MAX_RECORD_BYTES:
        return f"{st.st_size} bytes, over Claude's {MAX_RECORD_BYTES}-byte limit"
    return None


def claude_view(path: str, data: bytes) -> tuple[bytes | None, str | None]:
    """`data`, the bytes relay read at `path` (through the one loader, store/loader.py), as Claude's
    listing would take them: the same bytes, or (None, why it skips the file)."""
    why = _skipped_by_lstat(path)
    return (None, why) if why else (data, None)


def read_record_file(path: str) -> tuple[bytes | None, str | None]:
    """A registry file's bytes as Claude reads them (a regular file, at most 256 KiB, lstat), or
    (None, why it is skipped). Opened non-blocking and checked again once open: a FIFO put there
    in between is never read (the early prefetch calls this, before any relay module loads)."""
    why = _skipped_by_lstat(path)
    if why:
        return None, why
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not a regular file"
        chunks, size = [], 0
        while size <= MAX_RECORD_BYTES:
            chunk = os.read(fd, MAX_RECORD_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), None
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    finally:
        os.close(fd)


def _js_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; Python's json would take them


def parse_record(data: bytes) -> object:
    """The file's JSON as JavaScript's `JSON.parse(readFile(f, "utf8"))` sees it: invalid UTF-8
    replaced (not refused), a leading BOM refused, NaN/Infinity refused. ValueError if not JSON."""
    return json.loads(data.decode("utf-8", "replace"), parse_constant=_js_constant)


def _start_of(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat, or None when unreadable (as Claude's reader returns it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split(" ")
    return fields[19] if len(fields) > 19 else None


def claude_live(pid: int, recorded: dict) -> bool:
    """Claude's liveness rule for one record (CC §1.6, 2.1.332): kill(pid, 0) and the start time."""
    if pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False  # ESRCH, and EPERM too: process.kill throws on both
    start = recorded.get("procStartFt")
    if not isinstance(start, str):
        start = recorded.get("procStart")
    if not isinstance(start, str):
        return True
    actual = _start_of(pid)
    return actual is None or actual == start


def _row(pid: int, rec: dict, kind: str) -> RuleRow:
    status = rec.get("status") if rec.get("status") in STATUSES else None
    printed = None if status is None else status if status in ("idle", "waiting") else "busy"
    waiting = rec.get("waitingFor")
    started = rec.get("startedAt")
    ok_started = (isinstance(started, (int, float)) and not isinstance(started, bool)
                  and 0 <= started <= _MAX_EPOCH)
    sid = rec.get("sessionId")
    name = rec.get("name")
    return RuleRow(pid=pid, kind="background" if kind == "bg" else "interactive", status=printed,
                   waiting_for=waiting if printed == "waiting" and isinstance(waiting, str) and waiting else None,
                   session_id=sid if isinstance(sid, str) and sid else None,
                   cwd=rec["cwd"] if isinstance(rec.get("cwd"), str) else "?",
                   started_at=started if ok_started and started is not None else 0, name=name if isinstance(name, str) and name else None)


def apply_rule(files: Iterable[tuple[str, bytes | None, str | None]],
               verified: Callable[[str | None], bool] = lambda version: True) -> RuleListing:
    """The rule over `files`: (file name in sessions/, its bytes or None, why unreadable).

    `verified(version)` says whether relay has verified the client version a live record names;
    a live record of another version leaves the listing undecided."""
    out = RuleListing()
    for fname, data, why in files:
        if not RECORD_NAME.fullmatch(fname):
            continue
        stem = fname[:-5]
        pid = int(stem)
        if str(pid) != stem:
            out.skipped[fname] = f"not named for its pid as Claude spells it ({pid}.json)"
            continue
        if data is None:
            out.skipped[fname] = why or "unreadable"
            continue
        try:
            parsed = parse_record(data)
        except ValueError:
            out.skipped[fname] = "not JSON"
            continue
        rec = parsed if isinstance(parsed, dict) else {}
        if not claude_live(pid, rec):
            out.left_out[pid] = "not live by Claude's rule (kill(pid, 0) and its start time)"
            continue
        kind = rec.get("kind") if rec.get("kind") in KINDS else None
        if kind == "bg" and isinstance(rec.get("jobId"), str):
            out.undecided[fname] = "a background job's record (Claude lists it through its job store)"
            continue
        version = rec.get("version") if isinstance(rec.get("version"), str) else None
        if kind in ("interactive", "bg") and not verified(version):
            out.undecided[fname] = f"written by Claude Code {version or '(no version)'}, a version relay has not verified"
            continue
        if kind not in ("interactive", "bg"):
            out.left_out[pid] = f"its kind is {rec.get('kind')!r}; Claude lists only interactive sessions here"
            continue
        if isinstance(rec.get("parkedJobId"), str):
            out.left_out[pid] = "it is parked (parkedJobId); Claude does not list a parked session"
            continue
        out.rows.append(_row(pid, rec, kind))
    out.rows.sort(key=lambda r: r.started_at)
    return out


def listing_rows(listed: list[dict]) -> list[RuleRow]:
    """`claude agents --json`'s own output as rows, to set beside the rule's (tests, `relay doctor`)."""
    rows = []
    for x in listed:
        if not isinstance(x, dict) or not isinstance(x.get("pid"), int):
            continue
        rows.append(RuleRow(pid=x["pid"], kind=str(x.get("kind")), status=x.get("status"), waiting_for=x.get("waitingFor"),
                            session_id=x.get("sessionId"), cwd=x.get("cwd", "?"), started_at=x.get("startedAt", 0),
                            name=x.get("name")))
    return rows
