"""core/recipe_text.py: a recipe's template rules in one standard-library home (issue 40), the very
rules core/recipe.py's models apply (it calls them), importable without pydantic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from relay_repl.core import recipe, recipe_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_models_use_the_plain_rules():
    assert recipe.template_names is recipe_text.template_names
    assert recipe.BUILTINS is recipe_text.BUILTINS
    body = "ping from the relay operator (run {run}): {{literal}} {target}"
    assert recipe.render(body, {"run": "run-0badc0de", "target": "codex:beta"}) == recipe_text.render(
        body, {"run": "run-0badc0de", "target": "codex:beta"}) == (
        "ping from the relay operator (run run-0badc0de): {literal} codex:beta")


def test_a_missing_name_is_the_models_recipe_error_and_a_plain_lookup_error():
    with pytest.raises(recipe_text.MissingName, match=r"names \{run\}, which has no value"):
        recipe_text.render("x {run}", {})
    with pytest.raises(recipe.RecipeError, match=r"names \{run\}, which has no value"):
        recipe.render("x {run}", {})


def test_shipped_recipes_bodies_render_the_same_both_ways():
    for path in sorted((ROOT / "recipes").glob("*.toml")):
        rec = recipe.parse_recipe(path.read_text(), str(path))
        for step in rec.steps:
            if not step.body:
                continue
            values = {n: f"<{n}>" for n in recipe_text.template_names(step.body)}
            assert recipe_text.render(step.body, values) == recipe.render(step.body, values)


def test_the_plain_rules_load_no_pydantic():
    code = ("import sys, relay_repl.core.recipe_text as t; t.render('{a}', {'a': 'b'}); "
            "print(sorted(m for m in ('pydantic', 'anyio', 'asyncio', 'libtmux') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
