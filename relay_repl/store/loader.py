"""The one loader of every file relay reads that a person or a peer can edit.

hosts.toml, recipes, a notebook's run files (run.json), the lab's state and the clients'
registry records are read through here: `read_bytes` refuses whatever is not a regular file of a
sane size, and `load_toml`/`load_json` (core/file_shape.py) turn the bytes into a checked value.
Every fault is one FileProblem, `FILE: what is wrong (line L): what to do` (exit 2): the operator's
own file stops the command; a caller reading a client's file catches it and skips that target with
the line as a `relay doctor` finding.

Why not `path.read_text()`: a directory in the file's place, a FIFO (the read blocks forever,
`relay hosts` hung), a symbolic link to nothing, a file of gigabytes (read whole into memory) and
bytes that are not UTF-8 each met a different exception type, several of them escaping as a
traceback. Here each is a sentence. Running as root, a file's mode never stops a read, so
"unreadable" in the tests is one of these real cases (and a privilege-dropped child for the mode).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from relay_repl.core import file_shape
from relay_repl.core.errors import FileProblem

T = TypeVar("T")

MAX_BYTES = 4 * 1024 * 1024
"""No file an operator writes by hand (hosts, a recipe) or a run record comes near this; a file of
more is refused rather than read whole into memory."""

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _not_a_file(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_bytes(path: Path, fix: str, *, missing_ok: bool = False, max_bytes: int = MAX_BYTES,
               error: type[FileProblem] = FileProblem) -> bytes | None:
    """The bytes of `path`, or None when it does not exist and `missing_ok`. A directory, FIFO,
    socket or device in its place, a symbolic link to nothing, a file over `max_bytes` or one the
    process may not read is one FileProblem naming it; a FIFO is never opened for a blocking read."""
    path = Path(path)
    try:  # stat before opening (then fstat what was opened, below): a device is never opened (opening one can act),
        st = path.stat()  # a socket cannot be, and a symbolic link to nothing or a file too big is named unread
    except FileNotFoundError:
        if path.is_symlink():
            raise error(path, f"is a symbolic link to {os.readlink(path)}, which does not exist",
                        "point it at the real file or remove it") from None
        if missing_ok:
            return None
        raise error(path, "does not exist", fix) from None
    except NotADirectoryError:
        if missing_ok:
            return None
        raise error(path, "cannot exist: a directory above it is a file", fix) from None
    except PermissionError:
        raise error(path, "cannot be read (permission denied on a directory above it)",
                    "check the owner and mode of its directories") from None
    except OSError as exc:
        raise error(path, f"cannot be read ({exc.strerror or exc})", fix) from None
    other = _not_a_file(st.st_mode)
    if other:
        raise error(path, f"is {other}, not a file", f"move it away (mv {path} {path}.bak); then {fix}")
    if st.st_size > max_bytes:
        raise error(path, f"is {st.st_size:,} bytes, more than the {max_bytes:,} relay reads of such a file",
                    f"it is not what relay wrote there; move it away and {fix}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except PermissionError:
        raise error(path, "cannot be read (permission denied)",
                    f"check its owner and mode (chmod u+r {path})") from None
    except OSError as exc:
        raise error(path, f"cannot be read ({exc.strerror or exc})", fix) from None
    try:
        st = os.fstat(fd)  # what was opened, not what was there a moment before
        other = _not_a_file(st.st_mode)
        if other:
            raise error(path, f"is {other}, not a file", f"move it away (mv {path} {path}.bak); then {fix}")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(path, f"cannot be read ({exc.strerror or exc})", fix) from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise error(path, f"is more than the {max_bytes:,} bytes relay reads of such a file",
                    f"it is not what relay wrote there; move it away and {fix}")
    return b"".join(chunks)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO | None:
    """`path` opened for binary reading when it is a regular file, else None (absent, a FIFO, a
    directory, a device, unreadable): for the append-only records relay streams (transcripts,
    rollouts), where a FIFO put in a record's place must not block the reader. Never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return os.fdopen(fd, "rb")
    except OSError:
        os.close(fd)
        return None


def read_text(path: Path, fix: str, *, missing_ok: bool = False, max_bytes: int = MAX_BYTES,
              error: type[FileProblem] = FileProblem) -> str | None:
    """`read_bytes`, decoded as UTF-8 (a NUL or a byte that is not UTF-8 names its line)."""
    data = read_bytes(path, fix, missing_ok=missing_ok, max_bytes=max_bytes, error=error)
    return None if data is None else file_shape.decode(data, path, fix, error)


def load_toml(path: Path, model: type[T], fix: str, *, missing_ok: bool = False, one_based: bool = False,
              error: type[FileProblem] = FileProblem) -> tuple[T | None, str]:
    """(the TOML file checked against `model`, its text); (None, "") when absent and `missing_ok`."""
    text = read_text(path, fix, missing_ok=missing_ok, error=error)
    if text is None:
        return None, ""
    data = file_shape.toml_table(text, path, fix, error)
    return file_shape.validated(model, data, path, text, fix, error=error, one_based=one_based), text


def load_json(path: Path, model: type[T], fix: str, *, missing_ok: bool = False, max_bytes: int = MAX_BYTES,
              error: type[FileProblem] = FileProblem) -> T | None:
    """The JSON file checked against `model`; None when absent and `missing_ok`."""
    text = read_text(path, fix, missing_ok=missing_ok, max_bytes=max_bytes, error=error)
    if text is None:
        return None
    data: Any = file_shape.json_value(text, path, fix, error)
    return file_shape.validated(model, data, path, text, fix, error=error, syntax="json")
