"""One way to do each of three things (issue 19 item 3): parse an envelope header, turn a
pydantic ValidationError into one line, wait for something by polling."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from relay_repl.core.envelope import Envelope, header_fields
from relay_repl.core.errors import EnvelopeError
from relay_repl.core.relay_ids import carries_id, headers_in
from relay_repl.core.validation import first_error

PKG = Path(__file__).resolve().parents[1] / "relay_repl"


def _product_modules() -> list[Path]:
    """The package's modules, the lab's stubs aside (they play the model servers, not relay)."""
    return [p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts and "stubs" not in p.parts]


def test_no_module_but_the_envelope_reads_header_fields_itself():
    """A regex or a split over `[relay/1 ...]` fields elsewhere is a second parser that can
    disagree with the envelope's (runner.py had one for `re=`)."""
    own = PKG / "core" / "envelope.py"
    pattern = re.compile(r"""re\.compile\(r?["'][^"']*(relay/1|re=|id=)""")
    offenders = [str(p.relative_to(PKG)) for p in _product_modules() if p != own and pattern.search(p.read_text())]
    assert offenders == []


def test_the_id_finder_and_the_envelope_read_a_header_alike():
    env = Envelope.make(sender="operator:relay@h.1", to="peer", id="h.1-7", hop=2, want="reply", re="h.2-3",
                        body="hello ] [relay/1 id=h.1-8]")
    line = env.compose()
    head = line[len("[relay/1 "):line.index("] ")]
    assert headers_in(line) == [header_fields(head)]
    assert carries_id(line, "h.1-7") == header_fields(head)
    assert header_fields(head)["re"] == "h.2-3" == Envelope.parse(line).re


@pytest.mark.parametrize("head, fault", [
    ("from=a  to=b", "doubled space"), ("from=a to", "is not key=value"), ("id=1 id=2", "repeats field"),
])
def test_one_parser_names_each_fault(head, fault):
    with pytest.raises(EnvelopeError, match=fault):
        header_fields(head)
    assert headers_in(f"[relay/1 {head}] body") == []  # the id finder skips what does not parse


def test_unknown_fields_are_refused_only_where_the_caller_says_so():
    assert header_fields("zz=1") == {"zz": "1"}
    with pytest.raises(EnvelopeError, match="unknown field 'zz'"):
        header_fields("zz=1", known=("id",))


def test_a_validation_error_is_one_line_with_its_place_and_the_value_it_got():
    with pytest.raises(EnvelopeError) as err:
        Envelope.make(sender="operator:relay@h.1", to="peer", id="h.1-7", hop=0, want="maybe", body="hi")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("envelope field want: ") and "'maybe'" in msg


def test_first_error_counts_positions_from_one_when_asked_and_names_unknown_keys():
    from pydantic import BaseModel, ConfigDict, ValidationError

    class M(BaseModel):
        model_config = ConfigDict(extra="forbid")
        xs: list[int]

    with pytest.raises(ValidationError) as err:
        M.model_validate({"xs": [1, "no"], "colour": 1})
    first = first_error(err.value, one_based=True, unknown_key="is not a key")
    assert first.loc == "xs.2" and first.more == " (+1 more)"
    assert first_error(err.value).loc == "xs.1"
    with pytest.raises(ValidationError) as err:
        M.model_validate({"xs": [], "colour": 1})
    assert first_error(err.value, unknown_key="is not a key").msg == "is not a key"


def _sleeps_in_loops(path: Path) -> list[int]:
    """Lines of `await ...sleep(...)` inside a `while` loop: a wait written by hand."""
    hits = []
    for loop in ast.walk(ast.parse(path.read_text())):
        if isinstance(loop, ast.While):
            for node in ast.walk(loop):
                if (isinstance(node, ast.Await) and isinstance(node.value, ast.Call)
                        and (getattr(node.value.func, "attr", None) or getattr(node.value.func, "id", None)) == "sleep"):
                    hits.append(node.lineno)
    return hits


def test_every_async_wait_loop_is_poll_until():
    """The lab (blocking, beside the product) aside; system/polling.py is the one loop."""
    one = PKG / "system" / "polling.py"
    found = {str(p.relative_to(PKG)): lines for p in _product_modules()
             if p != one and "lab" not in p.relative_to(PKG).parts[:1] and (lines := _sleeps_in_loops(p))}
    assert found == {}
