"""Not a recipe: marks this folder as the package `relay_repl.recipes_data` (pyproject's package-dir
mapping), so the wheel ships the recipes and notebooks and `importlib.resources` finds them in a
checkout and in an installed wheel alike."""
