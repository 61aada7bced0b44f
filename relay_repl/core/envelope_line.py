"""The relay/1 line's text rules without pydantic: the header's constants, the percent-encoding
of its values, the one header formatter, and `plain_line`, which composes a line whose every
field is plainly valid.

Why apart from core/envelope.py: `relay reply` is one process start per answer a Codex agent
gives (issue 33: 0.22-0.39 CPU-s, most of it importing pydantic for the `Envelope` model); its
answer is built from values relay itself made (its own address, a ledger id, the id it answers)
and one line of text. `Envelope.header` formats through `format_header` here, so there is still
one header builder (tests/core/test_envelope_builder.py); `Envelope` stays the validator and the
parser. `plain_line` accepts only what `Envelope.make` surely accepts (printable ASCII header
values without space, `%` or `]`, a printable body within the size cap): anything else is None, and
the caller builds the `Envelope`, whose refusal is then the one it always was."""

from __future__ import annotations

import re
import unicodedata

PREFIX = "[relay/1 "
HOP_CAP = 4
MAX_BODY = 4000
"""Bodies are one-liners; large-message behaviour is unmeasured on every
transport (seed section 10), so stay far below every known cap."""

WANTS = ("reply", "ack", "none")


def _needs_escape(ch: str) -> bool:
    if ch in "%]":
        return True
    if ch.isspace():
        return True
    return unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"}


def encode_value(value: str) -> str:
    """Percent-encode one header value (UTF-8 bytes of each escaped character).

    `to=` is encoded as `to%3D` wherever it occurs, so a name like `x to=ops`
    cannot pose as a header field even to a parser that ignores our spacing.
    """
    if _PLAIN_VALUE.fullmatch(value):  # nothing to escape (most values): no per-character Unicode lookups
        return value.replace("to=", "to%3D")  # issue 33: ~0.4 ms profiled per composed line before
    out: list[str] = []
    for ch in value:
        if _needs_escape(ch):
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out).replace("to=", "to%3D")


def format_header(sender: str, to: str, id: str, hop: int, want: str, re: str | None) -> str:
    """The one formatter of a relay/1 header (`Envelope.header` is this, of its fields)."""
    fields = {"from": sender, "to": to, "id": id, "hop": str(hop), "want": want}
    if re is not None:
        fields["re"] = re
    return PREFIX + " ".join(f"{k}={encode_value(v)}" for k, v in fields.items()) + "]"


_PLAIN_VALUE = re.compile(r"[!-$&-\\^-~]+")
"""Printable ASCII without space, `%` or `]`: a value every header field's validator accepts as text."""
_PLAIN_ID = re.compile(r"[!-$&-\\^-~]+-[0-9]+")


def _plain(value: object, min_len: int = 1) -> bool:
    return isinstance(value, str) and len(value) >= min_len and bool(_PLAIN_VALUE.fullmatch(value))


def _plain_sender(value: object) -> bool:
    if not _plain(value, 3):
        return False
    assert isinstance(value, str)
    role, sep, rest = value.partition(":")
    agent, sep2, addr = rest.partition("@")
    return bool(sep and sep2 and role and agent and addr)


def _plain_id(value: object) -> bool:
    return _plain(value, 3) and bool(_PLAIN_ID.fullmatch(str(value)))


def plain_line(*, sender: str, to: str, id: str, hop: int, want: str, re: str | None, body: str) -> str | None:
    """`Envelope.make(**fields).compose()` when every field is plainly valid, else None (then build the
    `Envelope`: it accepts or refuses as always). Never a line `Envelope.make` would refuse."""
    if not (_plain_sender(sender) and _plain(to) and _plain_id(id) and (re is None or _plain_id(re))):
        return None
    if type(hop) is not int or not 0 <= hop <= HOP_CAP or want not in WANTS:
        return None
    if not isinstance(body, str) or not 1 <= len(body) <= MAX_BODY or not body.isprintable():
        return None  # isprintable: no control, surrogate, line or paragraph break, format character
    return f"{format_header(sender, to, id, hop, want, re)} {body}"
