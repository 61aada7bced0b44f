"""The wheel is the product (issue 20): it carries every file `relay` reads at run time.

Built from a clean copy of the tree by scripts/build-wheel (the one build scripts/wheel-check
installs), then listed: every shipped recipe and notebook, the recipes' README, every adapter
file, each kind's client lock entries, and every module of the package (setup.py finds the packages; a
discovery that missed one, e.g. a folder without an __init__.py, would leave it out of the wheel).
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([str(ROOT / "scripts" / "build-wheel"), str(out)], capture_output=True, text=True,
                           timeout=240)
    assert built.returncode == 0, built.stderr
    path = Path(built.stdout.strip().splitlines()[-1])
    with zipfile.ZipFile(path) as zf:
        return set(zf.namelist())


def _tracked(under: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", under],
                         capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if (ROOT / f).is_file()]


def test_every_shipped_recipe_and_notebook_is_in_the_wheel(wheel_names):
    shipped = [f for f in _tracked("recipes") if f.endswith((".toml", ".py", ".md"))]
    assert {"recipes/ping.toml", "recipes/README.md", "recipes/triage.py"} <= set(shipped)
    missing = [f for f in shipped if "relay_repl/recipes_data/" + f.removeprefix("recipes/") not in wheel_names]
    assert missing == []


def test_every_adapter_file_is_in_the_wheel(wheel_names):
    shipped = [f for f in _tracked("adapters") if f.endswith(".md")]
    assert "adapters/claude-code.md" in shipped and "adapters/codex.md" in shipped
    missing = [f for f in shipped if "relay_repl/adapters_data/" + f.removeprefix("adapters/") not in wheel_names]
    assert missing == []


def test_every_module_and_the_client_pins_are_in_the_wheel(wheel_names):
    wanted = [f for f in _tracked("relay_repl") if f.endswith(".py")]
    wanted += [f for f in _tracked("relay_repl/agents") if f.endswith("/npm-lock.json")]  # each kind's client lock
    assert len(wanted) > len([f for f in _tracked("relay_repl") if f.endswith(".py")])
    assert [f for f in wanted if f not in wheel_names] == []


def test_the_build_configuration_uses_no_deprecated_form(monkeypatch):
    """pyproject.toml as setuptools reads it for every build: no deprecation warning (the `license = { text
    = ... }` table is refused from 2027-Feb-18), and the licence is an SPDX expression (License-Expression)."""
    import warnings

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    import gc

    monkeypatch.chdir(ROOT)
    gc.collect()  # what earlier tests in this worker left is finalized before, not inside, the block below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    # a ResourceWarning is the collector finalizing some other test's object during the block (CI saw an
    # unclosed pipe's FileIO here), never setuptools reading pyproject.toml
    said = [w for w in caught if not issubclass(w.category, ResourceWarning)]
    assert [f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in said] == []
    assert dist.metadata.license_expression == "MIT"


def test_the_editable_install_prints_no_warning_wall(tmp_path):
    """`pip install -e .` (scripts/bootstrap, so `./scripts/test` and `./scripts/relay --lab` on a fresh
    clone) calls the backend's build_editable hook; every warning the backend emits there pip prints as a
    `!!`-framed block. Called here through the same hook library pip vendors (pyproject_hooks, with the
    .venv's setuptools), on a clean copy of the tree: no warning at all (issue 39; the old setup.py gives
    setuptools' InformationOnly 'Editable installation.' wall)."""
    import sys
    import warnings

    from pyproject_hooks import BuildBackendHookCaller, default_subprocess_runner

    src = tmp_path / "src"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for f in (f.decode() for f in files if f):
        if (ROOT / f).is_file() and not (ROOT / f).is_symlink():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            (src / f).write_bytes((ROOT / f).read_bytes())
    caller = BuildBackendHookCaller(str(src), "setuptools.build_meta", python_executable=sys.executable,
                                    runner=default_subprocess_runner)
    out = tmp_path / "out"
    out.mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name = caller.build_editable(str(out))
    assert name.endswith(".whl")
    walls = [str(w.message) for w in caught]
    assert walls == []
