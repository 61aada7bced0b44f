"""Where the lab lives and what its processes see: its layout, the cross-process lock, the client
binaries, the environment of its panes and stubs, and whether a private network namespace works.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import relay_repl.store.paths as paths

from relay_repl.lab.install import bin_dir as _cache_bin_dir

from relay_repl.lab.layout import Layout
from relay_repl.lab.state import load

Progress = Callable[[str], object]

UP_TIMEOUT = float(os.environ.get("RELAY_LAB_UP_TIMEOUT", "240"))
# Run by path (it imports nothing of the package), so no PYTHONPATH leaks into the panes.
NETNS = str(Path(__file__).with_name("netns.py"))

_lock_depth = 0
_lock_guard = threading.RLock()


def layout() -> Layout:
    return Layout.at(paths.lab_dir())


@contextlib.contextmanager
def lab_lock(lay: Layout) -> Iterator[None]:
    """Serialise up/down/ensure_lab on one lab across processes (flock beside the lab dir)."""
    global _lock_depth
    with _lock_guard:
        if _lock_depth:
            _lock_depth += 1
            try:
                yield
            finally:
                _lock_depth -= 1
            return
        lock_path = lay.root.with_name(lay.root.name + ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _lock_depth = 1
            try:
                yield
            finally:
                _lock_depth = 0
        finally:
            os.close(fd)


def package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _extra_path() -> list[str]:
    """Directories the clients need besides their own bin dir (node for codex.js, git),
    and relay's own, so a lab agent can answer with `relay reply`."""
    out = [os.path.dirname(sys.executable)]
    for tool in ("node", "git", "tmux"):
        found = shutil.which(tool)
        if found:
            out.append(os.path.dirname(found))
    return out


def lab_env(lay: Layout) -> dict[str, str]:
    env = lay.base_env(bin_dir(), _extra_path())
    env["RELAY_HOME"] = str(paths.state_dir())  # `relay reply` from a lab agent finds the operator's ledger and inbox
    return env


def bin_dir() -> Path:
    """Where this lab's clients live: the set `relay lab up --clients` recorded in lab.json
    (so later commands drive the same binaries), unless $RELAY_LAB_CLIENTS says otherwise."""
    if not os.environ.get("RELAY_LAB_CLIENTS"):
        st = load(layout().state_file)
        if st is not None and st.clients:
            return Path(st.clients) / "node_modules" / ".bin"
    return _cache_bin_dir()


def env_for(lay: Layout) -> dict[str, str]:
    return lay.client_env(bin_dir())


def env() -> dict[str, str]:
    """CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_RUNTIME_DIR, TMPDIR, RELAY_LAB_DIR, RELAY_TMUX_SOCKET, PATH."""
    return env_for(layout())


def netns_wanted() -> bool:
    return os.environ.get("RELAY_LAB_NETNS", "auto").lower() not in ("0", "no", "off", "false")


def netns_works() -> bool:
    proc = subprocess.run([sys.executable, NETNS, "--probe"], capture_output=True, timeout=20)
    return proc.returncode == 0


def glob_in(d: Path, pattern: str) -> list[Path]:
    try:
        return list(d.glob(pattern))
    except OSError:
        return []

