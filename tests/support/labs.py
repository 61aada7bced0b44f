"""One way for a test module (or the session) to own a private lab."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def private_lab_home(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """A RELAY_HOME of its own for a lab; the clients from the shared cache (installed on
    first use, else the tests skip with the reason). On exit: `lab down`, and the
    ~400 MB Codex daemon copy is removed."""
    import relay_repl.store.paths as paths
    from relay_repl.core.errors import LabError
    import relay_repl.lab.launcher as launcher
    from relay_repl.lab.install import install

    if not shutil.which("tmux"):
        pytest.skip("tmux not installed")
    mp = pytest.MonkeyPatch()
    mp.setenv("RELAY_LAB_CLIENTS", os.environ.get("RELAY_LAB_CLIENTS") or str(paths.clients_dir()))
    try:
        install(progress=lambda m: None)
    except LabError as exc:
        mp.undo()
        pytest.skip(f"lab clients unavailable: {exc}")
    home = tmp_path_factory.mktemp(name)
    mp.setenv("RELAY_HOME", str(home))
    try:
        yield home
    finally:
        try:
            launcher.down(progress=lambda m: None)
        finally:
            mp.undo()
            shutil.rmtree(home / "lab" / "cache", ignore_errors=True)
