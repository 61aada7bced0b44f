"""The parsers of outside input, for ANY input: a value, or relay's own error (one line), never
another exception (issue 32). The envelope (a peer's line), a recipe (a file), hosts.toml (the
operator's file, bytes and all), a notebook's cells and a run's run.json.

Fixed seed (derandomize) and a bounded example count, so the fast half is the same every run;
tests/conftest.py makes derandomize the default of every hypothesis test."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import RelayError
from relay_repl.core.notebook_cells import parse_cells
from relay_repl.core.recipe import parse_recipe

SETTINGS = settings(max_examples=250, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _only_relay_errors(fn, *args):
    try:
        return fn(*args)
    except RelayError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg, msg
        assert "errors.pydantic.dev" not in msg, msg
        return None


# -- the envelope --------------------------------------------------------------------------------

PIECES = ["[relay/1 ", "[relay/", "[relay/2 ", "from=", "to=", "id=", "hop=", "want=", "re=", "]", " ", "0", "4",
          "99", "²", "٣", "-1", "reply", "ack", "none", "op:x@h", "h-1", "%", "%2", "%zz", "\x00", "\u202e", "é", "="]
envelope_like = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=20).map("".join)


field = st.one_of(st.sampled_from(PIECES), st.text(max_size=5))
headers = st.builds(lambda f, t, i, h, w, r, b: f"[relay/1 from={f} to={t} id={i} hop={h} want={w}{r}] {b}",
                    st.one_of(st.just("op:x@h"), field), st.one_of(st.just("y"), field),
                    st.one_of(st.just("h-1"), field), st.one_of(st.sampled_from(["0", "1", "4", "5", "01", "²", "٣",
                                                                                 "-1", "1_0", " 1", "１"]), field),
                    st.one_of(st.sampled_from(["reply", "ack", "none"]), field),
                    st.one_of(st.just(""), field.map(lambda r: f" re={r}")), st.sampled_from(["hi", "ok go", "x"]))


@SETTINGS
@given(st.one_of(st.text(max_size=200), envelope_like, envelope_like.map(lambda s: "[relay/1 " + s)))
def test_the_envelope_parser_raises_only_relay_errors(line):
    env = _only_relay_errors(Envelope.parse, line)
    if env is not None:
        assert Envelope.parse(env.compose()) == env


@SETTINGS
@given(headers)
def test_a_whole_header_of_odd_fields_raises_only_relay_errors(line):
    """It found `hop=²` (str.isdigit, then int() raised ValueError) and `hop=٣` read as hop 3."""
    env = _only_relay_errors(Envelope.parse, line)
    if env is not None:
        assert line.split(" hop=", 1)[1].split(" ", 1)[0] == str(env.hop)  # ASCII digits only, as written
        assert Envelope.parse(env.compose()) == env


# -- recipes -------------------------------------------------------------------------------------

def toml_value(v) -> str:
    """A tiny TOML writer for the generated shapes (inline tables, arrays, scalars)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if v == v and abs(v) != float("inf") else "nan"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


KEYS = ["name", "description", "rounds", "until", "until_reply", "params", "steps", "kind", "to", "body", "want",
        "timeout", "transport", "type", "default", "a", "reply"]
scalars = st.one_of(st.booleans(), st.integers(-5, 200), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["t", "ask", "tell", "forward", "reply", "ack", "none", "target", "targets",
                                     "claude:alpha", "{a}", "{reply.a}", "{round}", "{", "}", "", "int", "text"]),
                    st.text(max_size=8).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
                      max_leaves=12)
documents = st.dictionaries(st.sampled_from(KEYS), values, max_size=7)


@SETTINGS
@given(st.one_of(st.text(max_size=300), documents.map(lambda d: "\n".join(f"{k} = {toml_value(v)}" for k, v in d.items()))))
def test_the_recipe_parser_raises_only_relay_errors(text):
    _only_relay_errors(parse_recipe, text, "recipes/t.toml")


# -- hosts.toml, as bytes in a file ------------------------------------------------------------------

host_rows = st.dictionaries(st.one_of(st.sampled_from(["b", "a/b", "x.y", ""]), st.text(max_size=6)),
                            st.one_of(values, st.dictionaries(st.sampled_from(["destination", "user"]), values,
                                                              max_size=2)), max_size=3)
hosts_docs = st.one_of(
    host_rows.map(lambda d: "hosts = " + toml_value({k: v for k, v in d.items()
                                                     if not any(0xD800 <= ord(c) <= 0xDFFF for c in k)})),
    values.map(lambda v: f"hosts = {toml_value(v)}"),
)


@SETTINGS
@given(st.one_of(st.binary(max_size=200), hosts_docs.map(str.encode),
                 st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass"))))
def test_the_hosts_loader_raises_only_relay_errors(relay_home, data):
    from relay_repl.store.hosts import load_hosts

    relay_home.mkdir(exist_ok=True)
    path = relay_home / "hosts.toml"
    path.write_bytes(data)
    hosts = _only_relay_errors(load_hosts, path)
    for h in hosts or []:  # what was read is what `relay hosts add` would have accepted
        from relay_repl.store.hosts import HostEntry

        assert HostEntry(name=h.name, destination=h.destination) == h


# -- a notebook's cells, and a run's outputs ----------------------------------------------------------

CELL_PIECES = ["# %%", "# %% [markdown]", "# %% tags=[\"parameters\"]", "# %% tags=[", "x = 1", "x = ", "await y",
               "return 1", "\n", "    ", "(", ")", "[" * 50, "\x00", "# ", "a = 'claude:alpha'", "b = 1e999",
               "c = -", "d = {1: 2}", "e = f(1)", "z: int = 3", "\u202e", "lambda: (yield)", "def f(): pass"]
notebook_like = st.lists(st.one_of(st.sampled_from(CELL_PIECES), st.text(max_size=6)), max_size=25).map("\n".join)


def _cells_and_defaults(text: str):
    nb = parse_cells(text, "nb.py")
    nb.defaults()
    return nb


@SETTINGS
@given(st.one_of(st.text(max_size=300), notebook_like))
def test_the_notebook_cell_parser_raises_only_relay_errors(text):
    _only_relay_errors(_cells_and_defaults, text)


@SETTINGS
@given(st.one_of(st.binary(max_size=200),
                 st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
                              lambda i: st.one_of(st.lists(i, max_size=3),
                                                  st.dictionaries(st.sampled_from(["id", "notebook", "path", "cells",
                                                                                   "state", "index", "kind", "plans"]),
                                                                  i, max_size=5)),
                              max_leaves=15).map(lambda v: json.dumps(v).encode())))
def test_the_run_file_loader_raises_only_relay_errors(tmp_path, data):
    from relay_repl.session.runs.notebook import NotebookRun
    from relay_repl.store.loader import load_json

    path = tmp_path / "run.json"
    path.write_bytes(data)
    _only_relay_errors(load_json, path, NotebookRun, "start a new run")
