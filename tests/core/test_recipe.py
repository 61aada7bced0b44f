"""The recipe format: validation at load time, one clear line per fault, templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay_repl.core.recipe import RecipeError, load_recipe, parse_recipe, recipe_schema, render, template_names

SHIPPED = Path(__file__).resolve().parents[2] / "recipes"

GOOD = """
name = "t"
description = "d"
rounds = 2
[params.a]
type = "target"
default = "claude:alpha"
[[steps]]
kind = "ask"
to = "{a}"
body = "round {round}/{rounds}: {reply.a}"
"""


def test_the_four_shipped_recipes_load():
    names = {load_recipe(p).name for p in SHIPPED.glob("*.toml")}
    assert {"ping", "review", "five-rounds", "ask-all"} <= names


def test_schema_is_json_schema_and_validates_the_shipped_files():
    import tomllib

    schema = recipe_schema()
    assert schema["$schema"].startswith("https://json-schema.org/") and schema["type"] == "object"
    assert set(schema["required"]) == {"name", "steps"}
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(schema)
    for p in SHIPPED.glob("*.toml"):
        jsonschema.validate(tomllib.loads(p.read_text()), schema)
    json.dumps(schema)


@pytest.mark.parametrize("text, needle", [
    ("name = 't'\nsteps = [", "not valid TOML"),
    (GOOD.replace('kind = "ask"', 'kind = "shout"'), "`steps.1.kind` must be 'ask', 'tell' or 'forward', not the text \"shout\" (line 9)"),
    (GOOD + "\ncolour = 'red'\n", "`steps.1.colour` is not a key relay knows here (line 13)"),
    (GOOD.replace("{reply.a}", "{reply.zed}"), "{reply.zed}, an unknown reply"),
    (GOOD.replace("{reply.a}", "{task}"), "{task}, which is unknown"),
    (GOOD.replace('to = "{a}"', 'to = "{b}"'), "not a parameter"),
    (GOOD.replace("{reply.a}", "{reply.a"), "stray '{'"),
    (GOOD.replace("rounds = 2", "rounds = 0"), "`rounds` must be greater than or equal to 1 (line 4)"),
    (GOOD.replace('body = "round {round}/{rounds}: {reply.a}"', ""), "a ask step needs a body"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_the_key(text, needle):
    with pytest.raises(RecipeError) as err:
        parse_recipe(text, "recipes/t.toml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("recipes/t.toml: ") and needle in msg, msg
    assert msg.endswith(": edit the recipe (`relay recipes schema` prints the format, recipes/README.md explains it)")
    assert "pydantic" not in msg and "Input should" not in msg
    assert err.value.exit_code == 2


def test_params_are_typed_and_unknown_ones_refused():
    r = parse_recipe(GOOD)
    assert r.resolve_params({}) == {"a": "claude:alpha"}
    with pytest.raises(RecipeError, match=r"no parameter zz; its parameters: a \(target\)"):
        r.resolve_params({"zz": "1"})
    with pytest.raises(RecipeError, match="not a target"):
        r.resolve_params({"a": "alpha"})


def test_templates_render_and_escape():
    assert template_names("{a} {{x}} {reply.b}") == ["a", "reply.b"]
    assert render("{a} {{x}} {reply.b}", {"a": "1", "reply.b": "2"}) == "1 {x} 2"
    with pytest.raises(RecipeError):
        render("{a}", {})
