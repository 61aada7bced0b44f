"""Removing a path that may or may not be there (a socket, a symlink, a file or a directory tree).

Why one helper: tearing a lab down removes what its clients left in and outside its directory, and
a missing path, a directory where a file was expected or a permission problem must never stop the
rest of the teardown.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def remove(p: Path) -> None:
    """Remove `p` (a directory: its whole tree); quiet when it is gone or cannot be removed."""
    try:
        p.unlink()
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass
