"""Claude Code's registry records, read with the standard library alone: the transcript path a
record names, whether its socket is ours, why a legacy record is skipped.

One home for what `provider.py` (the models' discovery) and `plain_listing.py` (`relay targets`'
plain path, loaded by file without the agents package) both read from a record.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the plain listing loads this file)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["RECORD_MAX_BYTES", "invalid_reason", "legacy_reason", "munge_cwd", "socket_is_ours", "transcript_path",
           "unreadable_reason", "ways_and_pane"]

RECORD_MAX_BYTES = 1024 * 1024  # a session record is ~1 KB: anything near this is not one


# -- transcript path (claude-code.md §4.1) -----------------------------------------------


def _java_hash(s: str) -> int:
    """Java/JS 32-bit string hash over UTF-16 code units, as a signed int."""
    h = 0
    data = s.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out


_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")
_NOT_ALNUM = re.compile("[^a-zA-Z0-9]")


def munge_cwd(cwd: str) -> str:
    """The project directory name Claude derives from a cwd.

    JS `replace(/[^a-zA-Z0-9]/g, "-")` works on UTF-16 code units, so a character
    outside the BMP becomes two dashes; over 200 units: cut, `-`, base36(|hash|).
    Two regex passes rather than a loop over code units: discovery derives one per
    record, on `relay targets`' cold path (the loop was ~60 us a call at load 7).
    """
    munged = _NOT_ALNUM.sub("-", _ASTRAL.sub("--", cwd))
    if len(munged) <= 200:
        return munged
    return f"{munged[:200]}-{_base36(abs(_java_hash(cwd)))}"


def transcript_path(cfg: Path | str, cwd: str | None, session_id: str | None) -> Path | None:
    """`$CFG/projects/<munged cwd>/<sessionId>.jsonl` (claude-code.md section 4.1)."""
    if not cwd or not session_id:
        return None
    return Path(cfg) / "projects" / munge_cwd(cwd) / f"{session_id}.jsonl"


def socket_is_ours(path: str | None) -> tuple[bool, str]:
    """True if `path` is a Unix socket owned by our uid (the same-uid trust boundary)."""
    if not path:
        return False, "record has no messagingSocketPath"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False, f"socket {path} does not exist"
    except OSError as exc:
        return False, f"socket {path} unreadable ({exc.strerror})"
    if not stat.S_ISSOCK(st.st_mode):
        return False, f"{path} is not a socket"
    if st.st_uid != os.getuid():
        return False, f"socket {path} belongs to uid {st.st_uid}, not ours"
    return True, "socket owned by us"


def legacy_reason(fname: str) -> str:
    """Why an orphaned `sessions/pid-<n>.json` (an older client's name, snake_case fields) is
    skipped: no Claude Code relay verified writes it, and `claude agents --json` (2.1.332) does not
    read it, so nothing says its session is live; its state is not guessed from its fields."""
    return (f"sessions/{fname} is a legacy record (an older Claude Code's `pid-<n>.json`, not read by "
            "`claude agents --json`): skipped, never listed as live; remove it if no such client runs")


def unreadable_reason(fname: str, problem: str) -> str:
    """Why `sessions/<fname>` is left out of the listing when it cannot be read (both listing paths' words)."""
    return f"sessions/{fname} unreadable ({problem}): fix its permissions or remove it"


def invalid_reason(fname: str, problem: str) -> str:
    """Why `sessions/<fname>` is left out when it is not a valid record (both listing paths' words)."""
    return f"sessions/{fname} is not a valid record ({problem}): it may be mid-write; refresh, or remove it if it persists"


def ways_and_pane(socket_path: str | None, pid: int, by_pane_pid: Mapping[int, Sequence[Any]],
                  detail: dict[str, Any], common: dict[str, Any]) -> tuple[list[str], Any]:
    """How a live session is reached, and its pane (both listing paths): the messaging socket's two
    transports where the socket is ours (else why not, in `detail`), tmux where exactly one pane has the
    session as its pane_pid (its fields into `detail` and `common`; several: a note, none rostered)."""
    transports: list[str] = []
    ours, why = socket_is_ours(socket_path)
    if ours:
        transports += ["claude-code-socket", "claude-code-message"]
    else:
        detail["socket_note"] = why
    found = by_pane_pid.get(pid, [])
    pane = found[0] if len(found) == 1 else None
    if pane is not None:
        transports.append("tmux")
        detail.update(pane.detail_fields())
        common.update(pane.target_fields())
    elif len(found) > 1:
        detail["pane_note"] = f"{len(found)} panes on different tmux servers claim pid {pid}; none rostered"
    return transports, pane
