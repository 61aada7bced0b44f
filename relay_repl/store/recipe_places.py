"""Where a recipe NAME is looked up, and which file it names: one standard-library home.

Why here: `relay run NAME -p KEY=VALUE` prints its first plan before pydantic loads (issue 40,
frontends/run_plain.py), so it finds the recipe file before the session's runs package is imported;
session/runs/recipes.py (`recipe_dirs`, `shipped_dir`, `find_recipe`) calls these, so both find the
same file. The places, in order: `./recipes/` (the project relay runs from), the recipes shipped
with relay_repl (the data package `relay_repl.recipes_data`), `$RELAY_HOME/recipes/`.
"""

from __future__ import annotations

import os
from pathlib import Path

from relay_repl.store.paths import data_dir, state_dir

SHIPPED = "relay_repl.recipes_data"


def shipped_dir() -> Path:
    """The recipes shipped with relay: the package `relay_repl.recipes_data` (in a checkout, the
    top-level `recipes/` folder mapped onto it), found through the import system (paths.data_dir)."""
    return data_dir(SHIPPED)


def recipe_dirs() -> list[Path]:
    dirs = [Path.cwd() / "recipes", shipped_dir(), state_dir(create=False) / "recipes"]
    out: list[Path] = []
    for d in dirs:
        r = d.resolve()
        if r not in out:
            out.append(r)
    return out


def plain_toml(name: str) -> Path | None:
    """The NAME.toml `find_recipe(name)` finds, when that much is certain without reading a notebook:
    the first place holding NAME.toml or NAME.py decides, and a NAME.py there (a notebook comes before a
    later place's NAME.toml, and only its cells say whether it is one) is None: the models' case."""
    for d in recipe_dirs():
        toml, py = d / f"{name}.toml", d / f"{name}.py"
        if os.path.lexists(toml):
            return toml
        if os.path.lexists(py):
            return None
    return None
