"""The `relay/1` envelope: one line that carries who, to whom, which id, how deep.

    [relay/1 from=<role>:<agent>@<addr> to=<role> id=<sender>-<n> hop=<k> want=<reply|ack|none>] <body>

Why it is shaped like this (seed section 5):
- One line, because Enter submits in both TUIs: a newline would send half a
  message.
- Header values are chosen by users (session names) and may contain `]`, which
  would end the header early, or `to=`, which would misroute a reply. So `%`,
  `]` and `to=` are percent-encoded in every header value. Whitespace and
  control characters are encoded too, because header fields are separated by
  spaces and the line must stay one line.
- The header ends at the first `]`. Because no header value can contain a raw
  `]`, a body that imitates a header can never change the parsed header.
- `id` must be unique across senders (receivers dedupe on it), so it is
  `<sender address>-<n>` with `n` from the ledger.
- `hop` is bounded 0..4 and re-validated on every change: pydantic's
  `model_copy(update=...)` skips validation, so this model overrides it.
- An answer carries an optional last header field `re=<relay id answered>`
  (percent-encoded like every value). A reply is linked to what it answers by
  this field only, never by scanning the body: a body may quote any id.

    [relay/1 from=agent:codex@<thread> to=operator id=<thread>-1 hop=1 want=none re=<our id>] tests pass
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from relay_repl.core.controls import control_refusal
from relay_repl.core.envelope_line import HOP_CAP as HOP_CAP, MAX_BODY as MAX_BODY, PREFIX as PREFIX
from relay_repl.core.envelope_line import encode_value as encode_value, format_header
from relay_repl.core.errors import EnvelopeError, LoopHalt
from relay_repl.core.validation import first_error

UI_MODE_CHARS = frozenset("/!#@?")
"""First characters that open a UI mode in some agent's composer instead of entering text
(`/` commands, `!` shell, `@` file mentions, `#` memory, `?` help): the refusal when the
receiver's own list (its adapter's `ui_mode_chars`, asked through its agent kind) is not at
hand. A leading `[` is safe."""

_HEADER_KEYS = ("from", "to", "id", "hop", "want", "re")
_REQUIRED_KEYS = ("from", "to", "id", "hop", "want")
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


_PCT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def decode_value(value: str) -> str:
    """Inverse of `encode_value`; a malformed escape is an error, not a guess."""

    def repl(m: re.Match[str]) -> str:
        raw = bytes.fromhex(m.group(0).replace("%", ""))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EnvelopeError(f"header value {value!r} has a percent escape that is not UTF-8") from exc

    if "%" in _PCT.sub("", value):
        raise EnvelopeError(f"header value {value!r} has a bare '%': encode it as %25")
    decoded = _PCT.sub(repl, value)
    return decoded


def _one_line(text: str) -> str:
    bad = sorted({repr(c) for c in text if c in _LINE_BREAKS})
    if bad:
        raise ValueError(f"must be one line (found {', '.join(bad)}); Enter would submit half of it")
    return text


def _no_controls(text: str) -> str:
    why = control_refusal(text)
    if why:
        raise ValueError(why)
    return text


def check_body(body: str) -> str:
    """Refuse, with one line naming the character and its position, a body holding a
    control character or a lone surrogate (see core.controls), and first one too long to
    send: the size check comes before any scan of the text. Called before any plan."""
    if len(body) > MAX_BODY:
        raise EnvelopeError(f"refusing to send: the message is {len(body):,} characters, over the {MAX_BODY:,} a "
                            "relay line may carry; shorten it (or send a path to a file instead) and send again")
    why = control_refusal(body)
    if why:
        raise EnvelopeError(why)
    return body


def _sender_shape(value: str) -> str:
    role, sep, rest = value.partition(":")
    agent, sep2, addr = rest.partition("@")
    if not (sep and sep2 and role and agent and addr):
        raise ValueError(f"sender {value!r} must look like <role>:<agent>@<address>")
    return value


def _id_shape(value: str) -> str:
    if not re.fullmatch(r".+-\d+", value, flags=re.DOTALL):
        raise ValueError(f"id {value!r} must be <sender address>-<n>")
    return value


OneLine = Annotated[str, Field(min_length=1), AfterValidator(_one_line)]
Body = Annotated[str, Field(min_length=1, max_length=MAX_BODY), AfterValidator(_no_controls), AfterValidator(_one_line)]
Sender = Annotated[str, Field(min_length=3), AfterValidator(_one_line), AfterValidator(_sender_shape)]
RelayId = Annotated[str, Field(min_length=3), AfterValidator(_one_line), AfterValidator(_id_shape)]
Hop = Annotated[int, Field(ge=0, le=HOP_CAP)]
Want = Literal["reply", "ack", "none"]


def check_typed_line(line: str, mode_chars: Iterable[str] = UI_MODE_CHARS) -> str:
    """Refuse a line that cannot safely be typed into a TUI composer whose UI modes open on
    `mode_chars` (the receiver's own, from its adapter; default: every one known)."""
    if not line:
        raise EnvelopeError("refusing to type an empty line")
    why = control_refusal(line, "line")
    if why:
        raise EnvelopeError(why)
    _one_line_or_error(line)
    if line[0] in frozenset(mode_chars):
        raise EnvelopeError(
            f"refusing to type a line starting with {line[0]!r}: it opens a UI mode instead of entering text; "
            "wrap it in a relay envelope (which starts with '[')"
        )
    return line


def _one_line_or_error(text: str) -> None:
    try:
        _one_line(text)
    except ValueError as exc:
        raise EnvelopeError(str(exc)) from None


class Envelope(BaseModel):
    """One relay message. Frozen: a changed hop is a new, re-validated envelope."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built on first use, off the targets path

    sender: Sender
    to: OneLine
    id: RelayId
    hop: Hop = 0
    want: Want = "none"
    re: RelayId | None = None
    """The relay id this message answers (a reply or an ack), or None."""
    body: Body

    # -- derived views -------------------------------------------------------
    @property
    def role(self) -> str:
        return self.sender.partition(":")[0]

    @property
    def agent(self) -> str:
        return self.sender.partition(":")[2].partition("@")[0]

    @property
    def address(self) -> str:
        return self.sender.partition(":")[2].partition("@")[2]

    @property
    def header(self) -> str:
        """The one formatter of a relay/1 header: every envelope line is built through here
        (tests/core/test_envelope_builder.py pins that no other module writes one); it formats
        through core/envelope_line.py, which `relay reply` uses without pydantic."""
        return format_header(self.sender, self.to, self.id, self.hop, self.want, self.re)

    # -- construction --------------------------------------------------------
    @classmethod
    def make(cls, **fields: Any) -> Envelope:
        """Validate, turning pydantic's multi-line report into one EnvelopeError line."""
        if isinstance(fields.get("body"), str):
            check_body(fields["body"])  # names the character (pydantic's own word on a surrogate does not)
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            raise EnvelopeError(_one_line_error(exc)) from None

    def compose(self) -> str:
        """The exact line that goes on the wire or into a composer."""
        return f"{self.header} {self.body}"

    def __str__(self) -> str:
        return self.compose()

    @classmethod
    def parse(cls, line: str) -> Envelope | None:
        """Parse one line.

        Returns None for a line that is not a relay line at all (so callers can
        pass arbitrary text through), and raises EnvelopeError naming the fault
        for a line that starts like one but is malformed.

        The same line parses to the same (frozen) envelope, kept for the last PARSED lines: an
        answer is read by the inbox, by its message's `body` and by the recipe's runner (issue 33:
        three validations of each answer, ~4% of relay's profiled CPU per target). A malformed line
        is not kept: it raises again each time.
        """
        if not line.startswith("[relay/"):
            return None
        return _parsed(cls, line)

    # -- hop rules -----------------------------------------------------------
    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Envelope:  # type: ignore[override]
        """Copy with re-validation (pydantic's own copy would accept hop=99)."""
        data = self.model_dump()
        data.update(update or {})
        return type(self).make(**data)

    def with_hop(self, hop: int) -> Envelope:
        return self.model_copy(update={"hop": hop})

    def next_hop(self) -> Envelope:
        """The hop a reply or forward must carry; refuses to pass the cap."""
        if self.hop >= HOP_CAP:
            raise LoopHalt(f"relay id {self.id} is at hop {self.hop}, the cap is {HOP_CAP}: not replying or forwarding")
        return self.with_hop(self.hop + 1)

    @property
    def is_halt(self) -> bool:
        """`relay-halt` anywhere in the message stops everything at once (seed section 9)."""
        return contains_halt(self.body) or contains_halt(self.header)


def header_fields(head: str, *, known: Iterable[str] | None = None) -> dict[str, str]:
    """The decoded `key=value` fields of a relay/1 header's inside (between `[relay/1 ` and `]`).

    The one header parser: `Envelope.parse` and the id finder (`relay_ids`, what `relay verify`
    and the evidence readers use) read headers through it, so they cannot disagree about what
    a header says.
    Raises EnvelopeError naming the fault: a doubled space, a token without `=`, a field not
    in `known` (when given), a repeated field, a bad escape."""
    allowed = None if known is None else set(known)
    fields: dict[str, str] = {}
    for token in head.split(" "):
        if not token:
            raise EnvelopeError("relay header has a doubled space")
        key, eq, raw = token.partition("=")
        if not eq:
            raise EnvelopeError(f"relay header field {token!r} is not key=value")
        if allowed is not None and key not in allowed:
            raise EnvelopeError(f"relay header has unknown field {key!r}")
        if key in fields:
            raise EnvelopeError(f"relay header repeats field {key!r}")
        fields[key] = decode_value(raw)
    return fields


def header_of(line: str | None) -> dict[str, str] | None:
    """The decoded fields of the relay/1 header `line` starts with (its body may be cut off, or
    absent), or None when it does not start with one or the header parser refuses it."""
    if not line or not line.startswith(PREFIX) or "]" not in line:
        return None
    try:
        return header_fields(line[len(PREFIX): line.index("]")])
    except EnvelopeError:
        return None


# What a peer can write that a reader takes for `relay-halt`: case, NFKC forms (fullwidth letters,
# U+FE63, U+FF0D), invisible format characters and combining marks between letters, Cyrillic
# look-alikes (controls.reading_form), any dash, spaces around it, a percent escape (a header value
# decodes %2D). A halt is the safe side: a false stop costs an `unhalt`, a missed one a send.
_HALT = re.compile(r"relay\s*[-\u2010-\u2015\u2212]\s*halt")


def contains_halt(text: str) -> bool:
    """`relay-halt` in any spelling a reader would take for it (seed section 9: honour it in any message)."""
    from urllib.parse import unquote

    from relay_repl.core.controls import reading_form

    return "relay-halt" in text or _HALT.search(reading_form(unquote(text))) is not None


def _one_line_error(exc: ValidationError) -> str:
    loc, msg, more = first_error(exc)
    return f"envelope field {loc or 'envelope'}: {msg}{more}"


PARSED = 256
"""Envelopes kept by the line they were parsed from (frozen values: sharing one is safe)."""


@functools.lru_cache(maxsize=PARSED)
def _parsed(cls: type[Envelope], line: str) -> Envelope:
    """`Envelope.parse` of a line starting `[relay/`: the envelope, or EnvelopeError (never kept)."""
    if not line.startswith(PREFIX):
        version = line[len("[relay/") :].split(" ", 1)[0].split("]", 1)[0]
        raise EnvelopeError(f"unsupported envelope version relay/{version}: only relay/1 is understood")
    end = line.find("]")
    if end < 0:
        raise EnvelopeError("relay header is not closed with ']'")
    head = line[len(PREFIX) : end]
    rest = line[end + 1 :]
    if not rest.startswith(" ") or len(rest) < 2:
        raise EnvelopeError("relay header must be followed by a space and a non-empty body")
    body = rest[1:]
    fields = header_fields(head, known=_HEADER_KEYS)
    missing = [k for k in _REQUIRED_KEYS if k not in fields]
    if missing:
        raise EnvelopeError(f"relay header lacks {', '.join(missing)}")
    hop = fields["hop"]
    # ASCII digits only: str.isdigit() holds for `²` (int() then raised ValueError) and `٣` (read as 3)
    if not (hop.isascii() and hop.isdigit()) or (len(hop) > 1 and hop[0] == "0"):
        raise EnvelopeError(f"relay header hop={hop!r} is not a whole number")
    return cls.make(
        sender=fields["from"], to=fields["to"], id=fields["id"], hop=int(hop), want=fields["want"],
        re=fields.get("re"), body=body,
    )
