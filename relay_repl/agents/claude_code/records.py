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

__all__ = ["RECORD_MAX_BYTES", "legacy_reason", "munge_cwd", "socket_is_ours", "transcript_path"]

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
