"""The package list, found rather than listed: every folder under relay_repl/ (an agent kind's
package added beside the others ships without editing a list; a data folder without an
__init__.py ships too, hence namespace discovery), plus the two data packages mapped from the
top-level adapters/ and recipes/ folders ([tool.setuptools.package-dir] in pyproject.toml).
Everything else about the build is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(packages=[*find_namespace_packages(include=["relay_repl", "relay_repl.*"], exclude=["*.__pycache__"]),
                "relay_repl.adapters_data", "relay_repl.recipes_data"])
