"""Finding a relay id where it really is: in an envelope header's `id=` field, never a substring.

Seed section 8: a substring match finds `id=1` inside `id=10` and inside any body quoting
it. An envelope is one line, so a real header starts a line of a message's text (possibly
after a `<cross-session-message ...>` wrapper tag); a header quoted in a body never does.
Shared by every reader that audits a transcript or rollout (`relay verify`).
"""

from __future__ import annotations

from collections.abc import Iterator

from relay_repl.core.envelope import PREFIX, decode_value, encode_value, header_fields
from relay_repl.core.errors import EnvelopeError


def _heads(text: str) -> Iterator[str]:
    """The raw header (between `[relay/1 ` and the first `]`) of each envelope starting a line."""
    if PREFIX not in text:
        return
    for line in text.split("\n"):
        line = line.lstrip()
        if line.startswith("<cross-session-message") and ">" in line:
            line = line[line.index(">") + 1:].lstrip()
        if line.startswith(PREFIX):
            end = line.find("]")
            if end >= 0:
                yield line[len(PREFIX):end]


def _fields(head: str) -> dict[str, str] | None:
    try:
        return header_fields(head)
    except EnvelopeError:
        return None


def headers_in(text: str) -> list[dict[str, str]]:
    """The decoded header fields of every relay envelope that starts a line of `text`.

    A header that does not parse (a token without `=`, a repeated key, a bad escape) is
    skipped: it names no id reliably."""
    return [f for f in map(_fields, _heads(text)) if f is not None]


def carries_id(text: str, relay_id: str) -> dict[str, str] | None:
    """The header in `text` whose id field is exactly `relay_id`, or None.

    Fast path for scanning: a header is decoded whole only when its raw `id=` token decodes
    to the id."""
    for head in _heads(text):
        token = next((t for t in head.split(" ") if t.startswith("id=")), None)
        try:
            if token is None or decode_value(token[3:]) != relay_id:
                continue
        except EnvelopeError:
            continue
        fields = _fields(head)
        if fields is not None and fields.get("id") == relay_id:
            return fields
    return None


def id_needle(relay_id: str) -> tuple[bytes, bytes]:
    """(needle, what may follow it) for a byte prefilter of JSON lines holding this id's header.

    The needle is the longest prefix of `id=<encoded id>` that a JSON writer cannot have
    escaped (it stops before `"`, `\\`, a control or a non-ASCII character). When that is the
    whole field, the byte after it must end the field (a space or the header's `]`), which
    rejects `id=1` inside `id=10` before any line is cut out; otherwise anything may follow.
    The prefilter never misses what the exact check (`carries_id`) would accept."""
    field = "id=" + encode_value(relay_id)
    safe = []
    for ch in field:
        if ch in '"\\' or not (0x20 <= ord(ch) < 0x7F):
            break
        safe.append(ch)
    whole = len(safe) == len(field)
    return "".join(safe).encode(), (b" ]" if whole else b"")
