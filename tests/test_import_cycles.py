"""scripts/import_cycles.py: no import cycle between siblings, counting function-level and
TYPE_CHECKING imports (import-linter's contract leaves TYPE_CHECKING ones out, which hid the
session.py <-> debugger.py cycle of issue 19)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "import_cycles.py"


def _check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_package_has_no_cycle_at_all():
    res = _check(ROOT)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def test_a_cycle_closed_by_a_function_level_and_a_type_checking_import_fails(tmp_path):
    root = _tree(tmp_path, {
        "relay_repl/__init__.py": "",
        "relay_repl/session/__init__.py": "",
        "relay_repl/session/session.py": "def debugger():\n    from relay_repl.session.debugger import Debugger\n",
        "relay_repl/session/debugger.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from relay_repl.session.session import Session\n",
    })
    res = _check(root)
    assert res.returncode == 1
    assert "relay_repl.session.debugger <-> relay_repl.session.session" in res.stderr


def test_a_cycle_between_subpackages_counts_and_a_package_importing_its_own_child_does_not(tmp_path):
    root = _tree(tmp_path, {
        "relay_repl/__init__.py": "",
        "relay_repl/a/__init__.py": "from relay_repl.a.x import f\n",   # parent -> own child: fine
        "relay_repl/a/x.py": "import relay_repl.a\nfrom relay_repl.b.y import g\n",
        "relay_repl/b/__init__.py": "",
        "relay_repl/b/y.py": "def g():\n    from relay_repl.a import f\n",
    })
    res = _check(root)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "under relay_repl: relay_repl.a <-> relay_repl.b" in res.stderr
