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
    """The header in `text` whose id field is exactly `relay_id`, or None."""
    return next((h for h in headers_in(text) if h.get("id") == relay_id), None)


def id_needle(relay_id: str) -> bytes:
    """Bytes every JSON line holding a header with this id must contain: the longest prefix of
    `id=<encoded id>` that a JSON writer cannot have escaped (it stops before `"`, `\\`, a
    control or a non-ASCII character). A prefilter on it never misses what the exact check
    (`carries_id`) would accept; it only narrows which lines get parsed."""
    safe = []
    for ch in "id=" + encode_value(relay_id):
        if ch in '"\\' or not (0x20 <= ord(ch) < 0x7F):
            break
        safe.append(ch)
    return "".join(safe).encode()
