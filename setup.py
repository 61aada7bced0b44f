"""The package list, found rather than listed: every folder under relay_repl/ (an agent kind's
package added beside the others ships without editing a list; a data folder without an
__init__.py ships too, hence namespace discovery), plus the two data packages mapped from the
top-level adapters/ and recipes/ folders ([tool.setuptools.package-dir] in pyproject.toml).
Everything else about the build is in pyproject.toml.

Why the warning filter: those two mapped folders make setuptools' editable install use its
meta-path finder (the only strategy that maps a package onto another folder), and that
strategy ends every `pip install -e .` with an information-only note framed in `!!` rows
("Please be careful with folders in your working directory with the same name as your
package...") that pip re-prints as a BuildBackendWarning: a wall on the first screen a
contributor sees (issue 39). It says nothing about this project (its folder of that name IS
the package), so it is dropped here, by its category and words, and nothing else is."""

import warnings

from setuptools import find_namespace_packages, setup

try:
    from setuptools.warnings import InformationOnly
except ImportError:  # an older setuptools (the build needs >= 77, which has it)
    InformationOnly = UserWarning  # type: ignore[assignment,misc]

warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

setup(packages=[*find_namespace_packages(include=["relay_repl", "relay_repl.*"], exclude=["*.__pycache__"]),
                "relay_repl.adapters_data", "relay_repl.recipes_data"])
