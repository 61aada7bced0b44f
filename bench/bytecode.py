"""Compile relay_repl's bytecode before a start-up benchmark, as an installed wheel has it.

Why: with PYTHONDONTWRITEBYTECODE=1 in the environment (this machine sets it) a source
checkout never gets its `__pycache__`, so every `relay` process compiles each module it
imports from source, while the tool it is compared with (ptpython, or the listing's own
dependencies) runs from compiled site-packages. `pip install` of the wheel compiles at
install time; the benchmarks measure that, not a compile per run.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import relay_repl


def ensure_bytecode() -> str:
    """Compile the package in place (skipped per file when up to date); one line saying so."""
    pkg = Path(relay_repl.__file__).parent
    ok = compileall.compile_dir(str(pkg), quiet=1, workers=1)
    flag = os.environ.get("PYTHONDONTWRITEBYTECODE")
    return f"bytecode: {pkg} compiled ({'ok' if ok else 'some files failed'}; PYTHONDONTWRITEBYTECODE={flag or 'unset'})"
