"""What a plain line of the `relay serve --stdio` protocol is, without its models: the version, the
line cap, the mismatch refusal, a request line that is plainly one, and an answer of plain JSON.

Why apart from core/serve_wire.py (the models: `Request`, `Answer`, the results' shapes): building
those models was most of `relay serve --stdio`'s start before its first answer on a warm channel
(issue 33). session/remote/serve.py reads a line with `plain_request` and writes with `answer_json`; a
line that is not plainly a request, and an answer whose values are not plain JSON, go through the
models there, so what is accepted, refused and said is theirs. The caller reads every answer
through `Answer` as before.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

PROTOCOL_VERSION = 1
MAX_LINE = 8 * 1024 * 1024  # a targets listing or a plan with its payload fits with room


def mismatch(theirs: object, ours: int = PROTOCOL_VERSION, who: str = "the remote relay") -> str:
    return (f"relay serve protocol mismatch: this relay speaks version {ours}, {who} speaks version {theirs}; "
            "install the same relay release on both machines")


class PlainRequest(NamedTuple):
    """A request line's fields, as `Request` would hold them."""

    v: int
    id: int
    op: str
    args: dict[str, Any]


def plain_request(data: object) -> PlainRequest | None:
    """The request `data` is when it is plainly one (only `v`, `id`, `op`, `args`, each of exactly the
    type `Request` declares), else None: then `Request.model_validate` decides, and says why."""
    if not isinstance(data, dict) or not set(data) <= {"v", "id", "op", "args"}:
        return None
    v, rid, op, args = data.get("v", PROTOCOL_VERSION), data.get("id"), data.get("op"), data.get("args", {})
    if type(v) is not int or type(rid) is not int or type(op) is not str or type(args) is not dict:
        return None
    return PlainRequest(v, rid, op, args)


def answer_json(id: int | None, ok: bool, result: Any = None, error: str | None = None,
                error_kind: str | None = None, ask: dict[str, Any] | None = None) -> bytes | None:
    """The answer line `Answer(...).model_dump_json()` gives, as plain JSON, when every value is of
    exactly the type `Answer` declares and plain JSON (the `Answer` model reads it alike at the other
    end); else None: then build the `Answer`, which serialises what JSON cannot."""
    if not ((id is None or type(id) is int) and type(ok) is bool and (error is None or type(error) is str)
            and (error_kind is None or type(error_kind) is str) and (ask is None or type(ask) is dict)
            and _plain_json(result) and _plain_json(ask)):
        return None
    fields = {"v": PROTOCOL_VERSION, "id": id, "ok": ok, "result": result, "error": error, "error_kind": error_kind,
              "ask": ask}
    try:
        return json.dumps(fields, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except (ValueError, UnicodeEncodeError, RecursionError):
        return None  # a lone surrogate, a nesting too deep: the model says what it says about it


def _plain_json(value: object, depth: int = 0) -> bool:
    """Only JSON's own values: None, bool, int, finite float, str, and lists and str-keyed dicts of them."""
    if depth > 100:
        return False
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_plain_json(x, depth + 1) for x in value)
    if type(value) is dict:
        return all(type(k) is str and _plain_json(v, depth + 1) for k, v in value.items())
    return False
