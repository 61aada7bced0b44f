"""Live: a lab running an UNPINNED client set (e.g. npm's latest). `relay send` over tmux or
the Claude socket refuses in one line naming `relay fidelity`; discovery still lists the
targets with their version; once the version is recorded as verified on this machine (what
a passing `relay fidelity --clients system` records), the same send proceeds.

Needs an npm prefix of another client set in RELAY_TEST_OTHER_CLIENTS (make one with
`relay lab install --claude latest --codex latest`, which prints its directory); without
it the module skips, so CI stays on the pinned clients."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay_repl.agents import versions
CLAUDE, CODEX = "claude-code", "codex"

pytestmark = pytest.mark.live

RELAY = [sys.executable, "-m", "relay_repl"]
OTHER = os.environ.get("RELAY_TEST_OTHER_CLIENTS")


@pytest.fixture(scope="module")
def other_lab(tmp_path_factory):
    if not OTHER or not (Path(OTHER) / "node_modules" / ".bin" / "claude").exists():
        pytest.skip("set RELAY_TEST_OTHER_CLIENTS to an npm prefix of unpinned clients "
                    "(`relay lab install --claude latest --codex latest` prints one)")
    import relay_repl.lab.launcher as launcher

    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("other-clients-lab")
    mp.setenv("RELAY_HOME", str(home))
    mp.setenv("RELAY_LAB_CLIENTS", OTHER)
    mp.setenv("RELAY_LAB_ANY_CLIENTS", "1")
    try:
        state = launcher.ensure_lab(claude=1, codex=1, progress=lambda m: None)
        if versions.version_status(CLAUDE, state.versions.get(CLAUDE)) != "unverified":
            pytest.skip(f"the clients in {OTHER} are already verified here ({state.versions})")
        yield home, state, launcher.env()
    finally:
        try:
            launcher.down(progress=lambda m: None)
        finally:
            mp.undo()


def _env(home: Path, lab_env: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, **lab_env, RELAY_HOME=str(home), RELAY_LAB_CLIENTS=str(OTHER))
    env.pop("RELAY_FIDELITY_CANDIDATE", None)
    return env


def _send(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(RELAY + ["send", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env=env, timeout=120)


def test_unverified_version_is_refused_then_lifted_by_a_recorded_pass(other_lab):
    home, state, lab_env = other_lab
    env = _env(home, lab_env)
    have = state.versions[CLAUDE]
    listed = subprocess.run(RELAY + ["targets"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0 and "claude:alpha" in listed.stdout  # discovery still works

    for transport in ("tmux", "claude-code-socket"):
        res = _send(env, "claude:alpha", "refused on an unverified version", "--transport", transport)
        err = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.returncode != 0, res.stdout + res.stderr
        assert len(err) == 1 and "relay fidelity" in err[0] and f"{CLAUDE} {have} is not verified" in err[0], err
        assert "Proceed?" not in res.stdout  # refused before any plan is put to the operator

    codex_have = state.versions[CODEX]
    res = _send(env, "codex:beta", "refused too", "--transport", "codex-queue")
    assert res.returncode != 0 and "relay fidelity" in res.stderr and codex_have in res.stderr

    # what a passing `relay fidelity --clients system` records for this version, in this state dir
    os.environ["RELAY_HOME"], old = str(home), os.environ.get("RELAY_HOME")
    try:
        versions.record_verified(CLAUDE, have, facts=1)
    finally:
        if old is not None:
            os.environ["RELAY_HOME"] = old
    import shlex

    from tests.support.tmuxdrive import Screen

    cmd = f"{shlex.join(RELAY + ['send', 'claude:alpha', 'the same send proceeds', '--transport', 'tmux'])}; " \
          "echo RC=$?; sleep 600"
    screen = Screen(["sh", "-c", cmd], dict(env, TERM="xterm-256color"))
    try:
        plan = screen.wait_for("Proceed? [y/N]", timeout=90)
        assert f"{CLAUDE} {have} verified" in plan  # the plan shows the target's client version
        screen.keys("y", "Enter")
        text = screen.wait_for("RC=", timeout=120)
    finally:
        screen.close()
    assert int(text.split("RC=")[-1].split()[0]) == 0, text
    assert "delivered" in text and "relay fidelity" not in text
