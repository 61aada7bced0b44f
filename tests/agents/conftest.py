from __future__ import annotations

import os
import time
from pathlib import Path

import libtmux
import pytest


@pytest.fixture
def tmux_server():
    """A private tmux server for pane tests, killed afterwards with its socket file."""
    srv = libtmux.Server(socket_name=f"relay-disc-{os.getpid()}-{time.monotonic_ns() % 10**8}")
    yield srv
    try:
        srv.kill()
    except Exception:
        pass
    # kill-server leaves the socket file behind
    tmpdir = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
    (tmpdir / (srv.socket_name or "")).unlink(missing_ok=True)
