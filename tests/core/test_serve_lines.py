"""core/serve_lines.py, what `relay serve --stdio` reads and writes before its models are built,
against the models (core/serve_wire.py): a plain request is the `Request` the model makes of it,
and whatever the model refuses is not plain; a plain answer line reads back, through `Answer`,
as the model's own line does."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay_repl.core.serve_lines import answer_json, plain_request
from relay_repl.core.serve_wire import Answer, Request

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3)
                       | st.tuples(kids) | st.frozensets(st.integers(), max_size=2), max_leaves=8)
FIELD = st.one_of(JSONISH, st.sampled_from([1, 2, 0, -1, True, 1.0, "1", "hello", {}, {"protocol": 1}, None]))


@SETTINGS
@given(st.dictionaries(st.sampled_from(["v", "id", "op", "args", "extra"]), FIELD, max_size=5) | JSONISH
       | st.builds(lambda k, v: {"v": 1, "id": 3, "op": "send", "args": {}, k: v},
                   st.sampled_from(["v", "id", "op", "args", "extra", "ID"]), FIELD))
def test_a_plain_request_is_the_models_request(data):
    plain = plain_request(data)
    try:
        model = Request.model_validate(data)
    except ValueError:
        assert plain is None, (data, plain)
        return
    if plain is not None:
        assert plain._asdict() == model.model_dump(), (data, plain)


@SETTINGS
@given(st.fixed_dictionaries({"id": st.one_of(st.none(), st.integers(), st.just(True)), "ok": st.one_of(st.booleans(), st.just(1)),
                              "result": JSONISH, "error": st.one_of(st.none(), st.text(max_size=6)),
                              "error_kind": st.one_of(st.none(), st.just("UsageError")),
                              "ask": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), JSONISH, max_size=2), JSONISH)}))
def test_a_plain_answer_reads_back_as_the_models_line(fields):
    plain = answer_json(**fields)
    try:
        model_line = Answer(**fields).model_dump_json()
    except ValueError:
        assert plain is None, fields
        return
    if plain is not None:
        assert Answer.model_validate_json(plain) == Answer.model_validate_json(model_line), (fields, plain, model_line)
        assert json.loads(plain) == json.loads(model_line)


def test_the_common_lines_are_plain():
    assert plain_request({"v": 1, "id": 3, "op": "hello", "args": {"protocol": 1}}) == (1, 3, "hello", {"protocol": 1})
    assert plain_request({"v": 1, "id": True, "op": "hello"}) is None  # the model says what a bool id is
    line = answer_json(1, True, result={"protocol": 1, "relay": "0.1.0", "pid": 42, "hostname": "h"})
    assert line is not None and json.loads(line)["result"]["pid"] == 42
    assert answer_json(1, True, result={"x": float("nan")}) is None and answer_json(1, True, result=("a",)) is None
