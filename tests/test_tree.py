"""The tree is the architecture: every package ships, and the README's Layout names every folder."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "relay_repl"


def _packages() -> set[str]:
    return {".".join(p.parent.relative_to(ROOT).parts) for p in PKG.rglob("__init__.py")
            if "__pycache__" not in p.parts}


def test_every_package_is_in_the_wheel():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert _packages() - listed == set(), "add the new package to [tool.setuptools] packages"


def test_readme_layout_names_every_folder_and_module_that_exists():
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    for pkg in sorted(_packages() - {"relay_repl"}):
        folder = pkg.replace(".", "/")
        names = {f"`{folder}/`", f"`{folder.split('/', 1)[1]}/`", f"`{folder.rsplit('/', 1)[1]}/`"}
        assert any(n in layout for n in names), f"README Layout misses {folder}/"
    for name in re.findall(r"`([\w/]+\.py)`", layout):
        hits = [p for p in PKG.rglob(name.rsplit("/", 1)[-1]) if "__pycache__" not in p.parts]
        assert hits, f"README Layout names {name}, which does not exist"
