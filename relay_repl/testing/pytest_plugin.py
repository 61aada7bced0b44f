"""The pytest plugin for relay_repl and the packages beside it (an agent kind, a transport).

Load it from the top-level conftest.py, as relay_repl's own tests do:

    pytest_plugins = ["relay_repl.testing.pytest_plugin"]

(It is not a `pytest11` entry point on purpose: that would load it, and its autouse
`relay_home`, into every pytest run of any environment relay_repl is installed in.)

What it gives:

- `relay_home` (autouse): every test gets a private RELAY_HOME, so no test reads or writes the
  operator's ledger, inbox or hosts.toml.
- `anyio_backend`: async tests run on asyncio.
- The doubles (relay_repl.testing): `memory_ledger` (a writable ledger in memory),
  `memory_transport` (the in-memory transport), `scripted_gate` (answers `gate_answers`, then
  No), `fake_targets` (one `fake:inbox`), and `fake_session`, a real Session over all four.
  Override `gate_answers` or `fake_targets` in a module (or parametrize them) to change them.
- `hostile`: the ssh channel double, a host `standin` in hosts.toml reached through a stand-in ssh.
- The lab: `lab` (a ready lab of the real pinned clients, this test's environment pointed at it),
  over `lab_home` (ONE lab for the whole test session; a module may override it with a lab of its
  own, e.g. `lab_home_2x2` with `lab_size` (2, 2)). Without tmux or the pinned clients (installed
  into the shared client cache on first use) a test that asks for the lab is skipped with the reason.
  Tests that use the shared lab must leave its sessions idle and named as they found them.

Imports stay inside the fixtures: loading the plugin costs a pytest run nothing it does not use.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from relay_repl.core.target import Target
    from relay_repl.session.core.gate import ScriptedGate
    from relay_repl.session.session import Session
    from relay_repl.store.ledger import Ledger
    from relay_repl.testing.hosts import HostileHost
    from relay_repl.transports.fake import InMemoryTransport


@pytest.fixture(autouse=True)
def relay_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "relay-home"
    monkeypatch.setenv("RELAY_HOME", str(home))
    return home


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the doubles --------------------------------------------------------------------------------

@pytest.fixture
def memory_ledger() -> Iterator[Ledger]:
    from relay_repl.store.ledger import Ledger

    led = Ledger.in_memory()
    try:
        yield led
    finally:
        led.close()


@pytest.fixture
def memory_transport() -> InMemoryTransport:
    from relay_repl.transports.fake import InMemoryTransport

    return InMemoryTransport()


@pytest.fixture
def gate_answers() -> list[bool]:
    """The scripted gate's answers to the plans it is shown, in order (then No): one yes."""
    return [True]


@pytest.fixture
def scripted_gate(gate_answers: list[bool]) -> ScriptedGate:
    """The approver: answers `gate_answers`; `.shown` keeps every plan it was shown."""
    from relay_repl.session.core.gate import ScriptedGate

    return ScriptedGate(gate_answers)


@pytest.fixture
def fake_targets() -> list[Target]:
    """The targets `fake_session` finds: `fake:inbox` on the in-memory transport."""
    from relay_repl.transports.fake import fake_target

    return [fake_target()]


@pytest.fixture
def fake_session(memory_ledger: Ledger, memory_transport: InMemoryTransport, scripted_gate: ScriptedGate,
                 fake_targets: list[Target]) -> Session:
    """A real Session (plan, gate, send, confirm, ledger) over the doubles: it finds `fake_targets`,
    asks `scripted_gate`, delivers through `memory_transport` and records in `memory_ledger`."""
    from relay_repl.agents.discovery import StaticProvider
    from relay_repl.core.target import Me
    from relay_repl.session.session import Session

    kinds = sorted({t.kind for t in fake_targets})
    return Session(ledger=memory_ledger, approve=scripted_gate, me=Me(address="me"),
                   providers=[StaticProvider(k, [t for t in fake_targets if t.kind == k]) for k in kinds],
                   transports=[memory_transport])


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relay_home: Path) -> HostileHost:
    """The ssh channel double: `hostile(*lies)` (hostile_host.py names them), `hostile.requests()`."""
    from relay_repl.testing.hosts import HostileHost

    return HostileHost(tmp_path, monkeypatch)


# -- the lab: the real pinned clients ----------------------------------------------------------------

@pytest.fixture(scope="session")
def lab_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from relay_repl.testing.labs import private_lab_home

    with private_lab_home(tmp_path_factory, "shared-lab") as home:
        yield home


@pytest.fixture(scope="session")
def lab_home_2x2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A second shared lab, for the modules that need two sessions of a kind (Claude alpha and
    beta, Codex gamma and delta): started once for them all, not once per module (a lab costs
    about 20 s to start and take down). Such a module overrides `lab_home` with it and
    `lab_size` with (2, 2)."""
    from relay_repl.testing.labs import private_lab_home

    with private_lab_home(tmp_path_factory, "shared-lab-2x2") as home:
        yield home


@pytest.fixture(scope="session")
def lab_size() -> tuple[int, int]:
    """(Claude, Codex) sessions the lab needs; a module with its own `lab_home` may override it."""
    return 1, 1


@pytest.fixture
def lab(lab_home: Path, lab_size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The lab (the shared one, or the module's own `lab_home`), ready, with this test's
    environment pointed at it (RELAY_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_RUNTIME_DIR,
    RELAY_TMUX_SOCKET, PATH), so discovery finds the lab's sessions."""
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

    from relay_repl.session.core.gate import ScriptedGate
    from relay_repl.session.core.inbox import clean_plan
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
