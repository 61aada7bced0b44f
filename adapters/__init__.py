"""Not code: marks this folder as the package `relay_repl.adapters_data` (pyproject's package-dir
mapping), so the wheel ships the adapter files and `importlib.resources` finds them in a checkout
and in an installed wheel alike."""
