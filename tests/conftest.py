"""Shared fixtures.

- Every test gets a private RELAY_HOME (`relay_home`, autouse).
- Async tests run on asyncio (`anyio_backend`).
- `lab`: ONE offline lab (real Claude Code + Codex, stub models) for the whole
  test session, reused by every live module that does not need its own. Tests
  that use it see RELAY_HOME and the lab's environment (CLAUDE_CONFIG_DIR,
  CODEX_HOME, XDG_RUNTIME_DIR, RELAY_TMUX_SOCKET, PATH) so discovery finds the
  lab's sessions. Tests must leave its sessions idle and named as they found them.
"""

from __future__ import annotations

import os

import pytest

from tests.support.labs import private_lab_home


@pytest.fixture(autouse=True)
def relay_home(tmp_path, monkeypatch):
    home = tmp_path / "relay-home"
    monkeypatch.setenv("RELAY_HOME", str(home))
    return home


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def lab_home(tmp_path_factory):
    with private_lab_home(tmp_path_factory, "shared-lab") as home:
        yield home


@pytest.fixture(scope="session")
def lab_home_2x2(tmp_path_factory):
    """A second shared lab, for the modules that need two sessions of a kind (Claude alpha and
    beta, Codex gamma and delta): started once for them all, not once per module (a lab costs
    about 20 s to start and take down). Such a module overrides `lab_home` with it and
    `lab_size` with (2, 2)."""
    with private_lab_home(tmp_path_factory, "shared-lab-2x2") as home:
        yield home


@pytest.fixture(scope="session")
def lab_size() -> tuple[int, int]:
    """(Claude, Codex) sessions the lab needs; a module with its own `lab_home` may override it."""
    return 1, 1


@pytest.fixture
def lab(lab_home, lab_size, monkeypatch):
    """The lab (the shared one, or the module's own `lab_home`), ready, with this test's
    environment pointed at it."""
    import relay_repl.lab.launcher as launcher

    monkeypatch.setenv("RELAY_HOME", str(lab_home))
    monkeypatch.setenv("RELAY_LAB_CLIENTS", os.environ["RELAY_LAB_CLIENTS"])
    claude, codex = lab_size
    state = launcher.ensure_lab(claude=claude, codex=codex, progress=lambda m: None)
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    _no_halt_left_over()
    _no_crash_leftovers()
    return state


def _no_crash_leftovers() -> None:
    """Tests that SIGKILL a relay process (a send, a recipe at its prompt) leave its inbox record,
    and its files in the lab's Claude registry, which relay removes only with the operator's
    approval. Approve that clean here, in-process and in the test's name, so every later test
    sees the lab as a fresh one would be (and `relay ...` prints no leftover notice)."""
    import anyio

    from relay_repl.session.gate import ScriptedGate
    from relay_repl.session.inbox import clean_plan
    from relay_repl.session.session import Session
    from relay_repl.store.ledger import Ledger

    if clean_plan() is None:
        return
    led = Ledger.default()
    try:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:  # a thread of its own: an async test's loop may be running here
            pool.submit(anyio.run, Session(ledger=led, approve=ScriptedGate([True])).clean, lambda line: None).result()
    finally:
        led.close()


def _no_halt_left_over() -> None:
    """The lab's ledger is shared by the tests that use the lab: a relay-halt an earlier test left
    in force (its own failure) would refuse every later send. Clear it, and say so."""
    import warnings

    from relay_repl.store.ledger import Ledger

    led = Ledger.default()
    try:
        halt = led.active_halt()
        if halt is not None:
            led.clear_halts(by="tests/conftest.py lab fixture")
            warnings.warn(f"an earlier test left a relay-halt in force in the shared lab ({halt.reason}); cleared",
                          stacklevel=2)
    finally:
        led.close()


# Every hypothesis test of the fast half runs the same examples on every run (a fixed seed), with a
# bounded count (each test's own max_examples, else hypothesis' 100): a failure is reproduced by
# rerunning, never a flake that comes and goes (issue 32).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("relay", derandomize=True, deadline=None, print_blob=True)
_hypothesis_settings.load_profile("relay")
