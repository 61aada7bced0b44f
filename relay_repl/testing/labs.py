"""One way for a test module (or the test session) to own a private lab: the real clients,
pinned, in a RELAY_HOME of its own. The pytest plugin's lab fixtures (pytest_plugin.py) are
built on it; a module that needs a lab of its own calls it from a fixture of its own."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def _install_lock(clients: Path) -> Iterator[None]:
    """One `install` at a time per client cache, across processes: the live half runs on two
    xdist workers, and two `npm ci` into one cache at once leave it half-written (seen: a
    worker's version check then read no claude-code and skipped every test on its lab).
    The lock file sits beside the cache, not in it (npm ci owns the cache's contents)."""
    import fcntl

    clients.parent.mkdir(parents=True, exist_ok=True)
    with open(clients.parent / f".{clients.name}.install.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


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
        with _install_lock(Path(os.environ["RELAY_LAB_CLIENTS"])):
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
