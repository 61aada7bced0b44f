"""Every wait in the package is system/polling's (`poll_until`, or `poll_until_sync` for
blocking code): no `while` loop elsewhere sleeps by hand. A hand-made loop is where the
deadline arithmetic drifts (no check at the deadline, progress at odd times), so this
syntax-tree check keeps them from coming back (issue 19 item 3)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "relay_repl"
HOME = PACKAGE / "system" / "polling.py"  # the one place the sleeping loops live
# The stub model servers pace a streamed response (hold N seconds, pinging): the response
# itself, not a wait for evidence.
PACED = PACKAGE / "lab" / "stubs"
SLEEPS = {"sleep"}  # time.sleep, anyio.sleep, asyncio.sleep, trio.sleep: any `<module>.sleep(...)`


def sleeping_loops(tree: ast.AST) -> list[int]:
    """Line numbers of `while` loops whose own body (not a nested def) calls a `.sleep(...)`."""
    found = []
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.While):
            continue
        todo: list[ast.AST] = list(loop.body)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SLEEPS \
                    and isinstance(node.func.value, ast.Name):
                found.append(loop.lineno)
                break
            todo.extend(ast.iter_child_nodes(node))
    return found


def offending_loops() -> list[str]:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == HOME or PACED in path.parents:
            continue
        for line in sleeping_loops(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    return offenders


def test_no_module_but_polling_sleeps_in_a_loop_of_its_own():
    # Parsed in a fresh interpreter of one thread: CPython 3.11's AST builder keeps its recursion
    # count per interpreter, and a parse racing another thread's (an xdist worker's) raised
    # "SystemError: AST constructor recursion depth mismatch" (cpython gh-106905), a false failure.
    probe = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_one_wait_loop as t; " \
            "print('\\n'.join(t.offending_loops()))"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    offenders = r.stdout.split()
    assert offenders == [], f"hand-made wait loops (use system/polling.poll_until or poll_until_sync): {offenders}"


def test_the_check_sees_a_hand_made_loop():
    src = "import time\ndef f():\n    while True:\n        if x():\n            time.sleep(0.1)\n"
    assert sleeping_loops(ast.parse(src)) == [3]
    nested = "def f():\n    while True:\n        def g():\n            time.sleep(1)\n        g()\n"
    assert sleeping_loops(ast.parse(nested)) == []
