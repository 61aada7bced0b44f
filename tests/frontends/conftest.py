"""Fixtures shared by the front-end tests."""

from __future__ import annotations

import shutil
import sys

import pytest

from tests.support.tmuxdrive import Screen, python_env


@pytest.fixture
def repl(relay_home):
    """The real `relay --fake` REPL in a private tmux terminal, at its first prompt."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux not installed")
    screen = Screen([sys.executable, "-m", "relay_repl", "--fake"], python_env(RELAY_HOME=str(relay_home)))
    try:
        screen.wait_for(">>>")
        yield screen
    finally:
        screen.close()
