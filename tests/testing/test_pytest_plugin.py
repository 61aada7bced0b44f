"""The pytest plugin as a plugin author meets it (issue 35): a project of its own, outside this
repository (so none of tests/conftest.py applies), whose conftest.py loads only
`relay_repl.testing.pytest_plugin`, tests a fourth agent kind's targets with the fixtures: a
private RELAY_HOME, a real Session over the doubles (the kind's targets, the in-memory transport,
a scripted gate, the ledger in memory), and the lab, skipped with its reason where it cannot run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

AUTHOR_TESTS = textwrap.dedent('''
    import os

    import pytest

    from relay_repl import DeliveryState
    from relay_repl.plugins import Target

    def toy(name):
        return Target(kind="toy-agent", prefix="toy", name=name, address=f"memory:{name}", pid=None, live=True,
                      state="idle", transports=("memory",), identified_by="the toy agent's replay double")

    @pytest.fixture
    def fake_targets():
        return [toy("one"), toy("two")]

    def test_home_is_private(relay_home, tmp_path):
        assert os.environ["RELAY_HOME"] == str(relay_home) and relay_home.is_relative_to(tmp_path)

    @pytest.mark.anyio
    async def test_approved_send_delivers_the_planned_bytes(fake_session, memory_transport, memory_ledger,
                                                            scripted_gate):
        d = await fake_session.send("toy:one", "hello from a plugin")
        assert d.exit_code == 0 and d.target == "toy:one" and d.state is DeliveryState.IN_TURN
        [plan] = scripted_gate.shown
        assert memory_transport.received == [plan.payload] and "hello from a plugin" in plan.payload
        assert memory_ledger.events(relay_id=d.relay_id)

    @pytest.mark.anyio
    @pytest.mark.parametrize("gate_answers", [[False]])
    async def test_declined_send_delivers_nothing(fake_session, memory_transport, scripted_gate):
        d = await fake_session.send("toy:two", "not this")
        assert d.state is DeliveryState.WITHHELD and d.exit_code != 0
        assert len(scripted_gate.shown) == 1 and memory_transport.received == []

    def test_the_lab(lab):
        raise AssertionError("reached only where tmux and the pinned clients are installed")
''')


def test_a_plugin_authors_project_gets_the_fixtures(tmp_path: Path):
    project = tmp_path / "relay-toy-agent"
    project.mkdir()
    (project / "conftest.py").write_text('pytest_plugins = ["relay_repl.testing.pytest_plugin"]\n')
    (project / "test_toy.py").write_text(AUTHOR_TESTS)
    no_tmux = tmp_path / "empty-bin"  # a PATH with no tmux: the lab fixture must skip, saying why
    no_tmux.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RELAY_"))} | {"PATH": str(no_tmux)}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                          str(project)], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "3 passed, 1 skipped" in ran.stdout, ran.stdout
    assert "SKIPPED [1] " in ran.stdout and "tmux not installed" in ran.stdout, ran.stdout
