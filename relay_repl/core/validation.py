"""One pydantic ValidationError as one line: where (the field path) and what is wrong.

Why one helper: every boundary that validates outside input (an envelope, a recipe file, an
adapter's toml block) must turn pydantic's multi-line report into the one-sentence message
the error tree promises, and three copies had drifted (one counted list positions from 0,
another from 1; one named the input of a bad literal, the others did not). Each caller puts
the line in its own sentence (`recipe FILE at LOC: MSG`, `envelope field LOC: MSG`).

Pure: reads only `exc.errors()` and `exc.error_count()` (no pydantic import, so importing
this costs nothing).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol


class _Validation(Protocol):
    def errors(self) -> Any: ...

    def error_count(self) -> int: ...


class FirstError(NamedTuple):
    """The first of a ValidationError's errors: `loc` (dotted path, "" at the top), `msg`
    (pydantic's message without its `Value error, ` prefix) and `more` (` (+N more)` or "")."""

    loc: str
    msg: str
    more: str


def dotted(loc: Any, *, one_based: bool = False) -> str:
    """An error's `loc` as a dotted path ("" at the top); `one_based` counts list positions from 1."""
    return ".".join(str(p + 1) if one_based and isinstance(p, int) else str(p) for p in loc)


def first_error(exc: _Validation, *, one_based: bool = False, unknown_key: str | None = None) -> FirstError:
    """The first error of `exc` as (loc, msg, more).

    `one_based`: list positions counted from 1, as a person counts `[[steps]]` in a file.
    `unknown_key`: the message for a key the model forbids (pydantic says `Extra inputs are
    not permitted`). A bad literal names the value it got, so the line says what to change."""
    err = exc.errors()[0]
    loc = dotted(err.get("loc", ()), one_based=one_based)
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden" and unknown_key is not None:
        msg = unknown_key
    elif err.get("type") == "literal_error":
        msg = f"{msg} (got {err.get('input')!r})"
    count = exc.error_count()
    return FirstError(loc, msg, f" (+{count - 1} more)" if count > 1 else "")
