"""Finding a relay id where it really is: in an envelope header's `id=` field, never a substring.

Seed section 8: a substring match finds `id=1` inside `id=10` and inside any body quoting
it. An envelope is one line, so a real header starts a line of a message's text (possibly
after a `<cross-session-message ...>` wrapper tag); a header quoted in a body never does.
Shared by every reader that audits a transcript or rollout (`relay verify`).
"""

from __future__ import annotations

from relay_repl.core.envelope import PREFIX, decode_value, encode_value
from relay_repl.core.errors import EnvelopeError


def headers_in(text: str) -> list[dict[str, str]]:
    """The decoded header fields of every relay envelope that starts a line of `text`.

    A header that does not parse (no `]`, a token without `=`, a repeated key, a bad escape)
    is skipped: it names no id reliably."""
    out: list[dict[str, str]] = []
    for line in text.split("\n"):
        line = line.lstrip()
        if line.startswith("<cross-session-message") and ">" in line:
            line = line[line.index(">") + 1:].lstrip()
        if not line.startswith(PREFIX):
            continue
        end = line.find("]")
        if end < 0:
            continue
        fields: dict[str, str] = {}
        try:
            for token in line[len(PREFIX):end].split(" "):
                key, eq, raw = token.partition("=")
                if not eq or key in fields:
                    raise EnvelopeError(f"bad header token {token!r}")
                fields[key] = decode_value(raw)
        except EnvelopeError:
            continue
        out.append(fields)
    return out


def carries_id(text: str, relay_id: str) -> dict[str, str] | None:
    """The header in `text` whose id field is exactly `relay_id`, or None.

    Fast path for scanning: a header is decoded only when its raw `id=` token decodes to the id."""
    if PREFIX not in text:
        return None
    for line in text.split("\n"):
        line = line.lstrip()
        if line.startswith("<cross-session-message") and ">" in line:
            line = line[line.index(">") + 1:].lstrip()
        if not line.startswith(PREFIX):
            continue
        end = line.find("]")
        if end < 0:
            continue
        token = next((t for t in line[len(PREFIX):end].split(" ") if t.startswith("id=")), None)
        try:
            if token is None or decode_value(token[3:]) != relay_id:
                continue
        except EnvelopeError:
            continue
        found = headers_in(line)
        if found and found[0].get("id") == relay_id:
            return found[0]
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
