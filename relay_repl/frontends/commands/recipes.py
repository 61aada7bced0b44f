"""`relay recipes`: the saved recipes and notebooks on the shelf (or the recipe JSON Schema)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add `relay recipes` to the subparsers."""
    s = sub.add_parser(
        "recipes",
        help="list the saved recipes (or print their JSON Schema)",
        description="List the recipes found in ./recipes/, the ones shipped with relay, and $RELAY_HOME/recipes/, "
        "with their descriptions and parameters. `relay recipes schema` prints the JSON Schema of the format.",
    )
    s.add_argument("what", nargs="?", choices=["list", "schema"], default="list", help="list (default) or schema")
    s.add_argument("--json", action="store_true", help="machine-readable list")
    s.set_defaults(func=cmd_recipes)


def cmd_recipes(args: argparse.Namespace) -> int:
    import json

    if args.what == "schema":
        from relay_repl.core.recipe import recipe_schema

        print(json.dumps(recipe_schema(), indent=1))
        return 0
    from relay_repl.core.errors import UsageError
    from relay_repl.core.recipe import RecipeError
    from relay_repl.session.runs.recipes import list_notebooks, list_recipes

    found = list_recipes()
    notebooks = list_notebooks()
    if args.json:
        print(json.dumps([
            {"name": r.name, "kind": "recipe", "path": str(p), "description": r.description, "rounds": r.rounds,
             "until": r.until, "params": {k: v.model_dump() for k, v in r.params.items()}}
            if not isinstance(r, RecipeError) else {"name": p.stem, "kind": "recipe", "path": str(p), "error": str(r)}
            for p, r in found] + [
            {"name": p.stem, "kind": "notebook", "path": str(p), "title": nb.title, "params": nb.defaults()}
            if not isinstance(nb, UsageError) else {"name": p.stem, "kind": "notebook", "path": str(p), "error": str(nb)}
            for p, nb in notebooks], indent=1))
        return 0
    from relay_repl.core.controls import visible

    def say(line: str) -> None:  # names, descriptions and errors come from files anyone may edit
        print(visible(line))

    if notebooks:
        say("notebooks (`relay run NAME` or `relay notebook run FILE.py`):")
        for p, nb in notebooks:
            if isinstance(nb, UsageError):
                say(f"{p.stem:<14} BROKEN: {nb}")
                continue
            say(f"{p.stem:<14} {nb.title or '(untitled)'} [notebook, {len(nb.code_cells)} cells]")
            for k, v in nb.defaults().items():
                say(f"{'':<16}-p {k}=<{type(v).__name__}> (default {v!r})")
        if found:
            say("recipes:")
    if not found and not notebooks:
        say("no recipes found (put NAME.toml in ./recipes/ or $RELAY_HOME/recipes/)")
        return 0
    for p, r in found:
        if isinstance(r, RecipeError):
            say(f"{p.stem:<14} BROKEN: {r}")
            continue
        stop = f"{r.rounds} round{'s' if r.rounds > 1 else ''}" + (f" or until {r.until!r}" if r.until else "")
        say(f"{r.name:<14} {r.description} [{stop}]")
        for k, v in r.params.items():
            default = f" (default {v.default})" if v.default is not None else " (required)"
            say(f"{'':<16}-p {k}=<{v.type}>{default}{': ' + v.description if v.description else ''}")
    print("run one with `relay run NAME -p KEY=VALUE` (add --dry-run to see every plan first)")
    return 0
