"""The text of a file a person or a peer can edit, as a checked value, every fault one line.

Why one module: hosts.toml, recipes, a notebook's run files, the lab's state and the clients'
registries are all written by someone else (the operator with an editor, a peer, a newer
client), so any of them can hold bytes that are not UTF-8, TOML or JSON that does not parse, or a
well-formed document of the wrong shape (`hosts = "x"` where a table belongs). Each reader used
to meet these in its own way, and several met them with a traceback (`'str' object has no
attribute 'items'`) or with pydantic's own report, whose last line is a URL. Here each fault
becomes one FileProblem: `FILE: what is wrong (line L): what to do`.

Pure: bytes and text in, values or FileProblem out (store/loader.py reads the bytes). Reads only
`exc.errors()` of a pydantic ValidationError, and never its str(), which ends with that URL.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from relay_repl.core.errors import FileProblem
from relay_repl.core.validation import dotted

T = TypeVar("T")

_TOML_AT = re.compile(r"^(?P<msg>.*?) \(at (?:line (?P<line>\d+), column \d+|end of document)\)$", re.S)


def line_at(data: bytes | str, offset: int) -> int:
    """The 1-based line holding byte (or character) `offset`."""
    nl = b"\n" if isinstance(data, bytes) else "\n"
    return data.count(nl, 0, max(0, offset)) + 1  # type: ignore[arg-type]


def decode(data: bytes, path: object, fix: str, error: type[FileProblem] = FileProblem) -> str:
    """`data` as UTF-8 text; a NUL or a byte that is not UTF-8 is one line naming where it is."""
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if 0 <= nul < exc.start:
            raise error(path, "holds a NUL byte (it is binary, or was cut short while being written)", fix,
                        line_at(data, nul)) from None
        bad = data[exc.start:exc.start + 1].hex()
        raise error(path, f"is not UTF-8 text (byte 0x{bad} at byte {exc.start + 1})", fix,
                    line_at(data, exc.start)) from None
    if nul >= 0:
        raise error(path, "holds a NUL byte (it is binary, or was cut short while being written)", fix,
                    line_at(data, nul))
    return text.removeprefix("\ufeff")


def toml_table(text: str, path: object, fix: str, error: type[FileProblem] = FileProblem) -> dict[str, Any]:
    """Parse TOML; a syntax error names its line, as tomllib found it."""
    import tomllib  # here, not at the top: `relay targets` reads JSON records only (its cold start is measured)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_AT.match(str(exc))
        msg, line = (m.group("msg"), int(m.group("line")) if m.group("line") else None) if m else (str(exc), None)
        if line is None and m is not None:
            msg, line = f"{msg} at the end of the file (is it cut short?)", text.count("\n") + 1
        raise error(path, f"is not valid TOML ({_lower_first(msg)})", fix, line) from None
    except RecursionError:
        raise error(path, "is not valid TOML (nested too deeply to read)", fix) from None


def json_value(text: str, path: object, fix: str, error: type[FileProblem] = FileProblem) -> Any:
    """Parse JSON; a syntax error names its line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        end = " (is it cut short?)" if exc.pos >= len(text.rstrip()) else ""
        raise error(path, f"is not valid JSON ({_lower_first(exc.msg)}{end})", fix, exc.lineno) from None
    except RecursionError:
        raise error(path, "is not valid JSON (nested too deeply to read)", fix) from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise error(path, f"is not valid JSON ({str(exc).splitlines()[0][:120]})", fix) from None


def validated(model: type[T], data: Any, path: object, text: str, fix: str, *,
              error: type[FileProblem] = FileProblem, one_based: bool = False, syntax: str = "toml") -> T:
    """`model.model_validate(data)`, its first fault as one FileProblem: the field path, a sentence
    saying what was expected and what was found, the line (best effort) and `fix`."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)  # type: ignore[attr-defined]
    except ValidationError as exc:
        problem, loc = shape_problem(exc, one_based=one_based, syntax=syntax)
        raise error(path, problem, fix, line_of(text, loc, syntax=syntax)) from None
    except RecursionError:
        raise error(path, "is nested too deeply to read", fix) from None


def toml_string(s: str) -> str:
    """A TOML basic string holding exactly `s`, for every writer of an operator's TOML file
    (hosts.toml, a saved recipe): each character TOML forbids raw (the controls, DEL) and every C1
    control escaped, so whatever is written reads back as it was. (A lone surrogate cannot be
    written at all: callers refuse it first.)"""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif o < 0x20 or 0x7F <= o <= 0x9F:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# -- pydantic errors as sentences -------------------------------------------------------------------

def kind_of(value: Any, syntax: str = "toml") -> str:
    """How a person calls the value they wrote: `text "x"`, `a table`, `a list`, ..."""
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the text {json.dumps(shown)}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, dict):
        return "a table" if syntax == "toml" else "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    from datetime import date, datetime, time

    if isinstance(value, (datetime, date, time)):
        return "a date or time"
    if value is None:
        return "nothing" if syntax == "toml" else "null"
    return "a value of another kind"


_EXPECTED = {
    "string_type": "text in quotes", "str_type": "text in quotes",
    "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number",
    "bool_type": "true or false", "bool_parsing": "true or false",
    "list_type": "a list ([...])", "tuple_type": "a list ([...])", "set_type": "a list ([...])",
}


def shape_problem(exc: Any, *, one_based: bool = False, syntax: str = "toml") -> tuple[str, tuple[Any, ...]]:
    """(sentence, loc) for the first error of a pydantic ValidationError, with `(and N more faults)`.
    Beside validation.first_error (pydantic's message, for a caller's own sentence), not a copy of it:
    this writes the whole sentence a person editing the file reads (`must be X, not Y`), and keeps `loc`
    as a tuple for `line_of`; the two share the dotted path (`dotted`)."""
    errors = exc.errors(include_url=False)
    err = errors[0]
    loc = tuple(err.get("loc", ()))
    where = dotted(loc, one_based=one_based)
    name = f"`{where}`" if where else "the file"
    kind = err.get("type", "")
    got = kind_of(err.get("input"), syntax)
    table = "a table ([NAME] with `key = value` lines)" if syntax == "toml" else "an object ({...})"
    if kind == "missing":
        sentence = f"{name} is missing"
    elif kind == "extra_forbidden":
        sentence = f"{name} is not a key relay knows here"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        sentence = f"{name} must be {table}, not {got}"
    elif kind in _EXPECTED:
        sentence = f"{name} must be {_EXPECTED[kind]}, not {got}"
    elif kind == "literal_error" or kind == "enum":
        sentence = f"{name} {_should(err.get('msg', ''))}, not {got}"
    elif kind in ("value_error", "assertion_error"):
        said = str(err.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        sentence = f"{name}: {said}" if where else said
    else:
        sentence = f"{name} {_should(err.get('msg', 'is not valid'))}"
    more = len(errors) - 1
    return sentence + (f" (and {more} more fault{'s' if more > 1 else ''})" if more > 0 else ""), loc


def _should(msg: str) -> str:
    """pydantic's `Input should be X` as `must be X`; any other message kept, first letter lowered."""
    for prefix, repl in (("Input should be", "must be"), ("Input should", "must"), ("Value should", "must"),
                         ("List should", "must"), ("String should", "must"), ("Dictionary should", "must")):
        if msg.startswith(prefix):
            return repl + msg[len(prefix):]
    return f"is not valid ({_lower_first(msg)})"


def _lower_first(s: str) -> str:
    return s[:1].lower() + s[1:]


# -- where in the text a field is --------------------------------------------------------------------

def line_of(text: str, loc: tuple[Any, ...], *, syntax: str = "toml") -> int | None:
    """Best effort: the line where the field at `loc` is written (its key, or the table header that
    opens it), walking the path from the top; the deepest part found wins, None when none is.
    A list position counts the `[[NAME]]` headers (TOML) of the key before it."""
    lines = text.splitlines()
    start, found = 0, None
    prev: str | None = None
    sep = "=" if syntax == "toml" else ":"
    for part in loc:
        if isinstance(part, int):
            if syntax != "toml" or prev is None:
                continue
            header = re.compile(rf"^\s*\[\[\s*[\"']?{re.escape(prev)}[\"']?\s*\]\]")
            hits = [i for i, ln in enumerate(lines) if header.match(ln)]
            if 0 <= part < len(hits):
                start, found = hits[part], hits[part] + 1
            continue
        key = str(part)
        token = re.compile(rf"(?<![\w-])[\"']?{re.escape(key)}[\"']?(?![\w-])")
        for i in range(start, len(lines)):
            ln = lines[i].strip()
            head = ln.startswith("[") if syntax == "toml" else False
            before = ln.split(sep, 1)[0] if sep in ln else ""
            if (head and token.search(ln)) or (before and token.search(before)):
                start, found = i, i + 1
                break
        else:
            break
        prev = key
    return found
