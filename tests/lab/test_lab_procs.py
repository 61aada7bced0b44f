"""Which processes `relay lab down` treats as the lab's (fast; uses plain `sleep`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import relay_repl.lab.procs as procs


@pytest.fixture
def spawn():
    started: list[subprocess.Popen] = []

    def go(env: dict[str, str], argv: list[str] | None = None) -> int:
        p = subprocess.Popen(argv or ["sleep", "30"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env})
        started.append(p)
        return p.pid

    yield go
    for p in started:
        p.kill()
        p.wait()


def test_lab_processes_by_home_cmdline_and_client_home(tmp_path, spawn):
    lab = tmp_path / "lab"
    home = lab / "home"
    by_home = spawn({"HOME": str(home)})
    # (the spawned processes' own body: alive until the fixture kills them)
    by_cmdline = spawn({}, [sys.executable, "-c", "import time; time.sleep(30)", str(lab / "x")])
    shell_with_lab_env = spawn({"CODEX_HOME": str(lab / "codex"), "HOME": "/root"})
    sibling_lab = spawn({"HOME": str(tmp_path / "lab2" / "home")},
                        [sys.executable, "-c", "import time; time.sleep(30)", str(tmp_path / "lab2")])
    homes = {"CODEX_HOME": (str(lab / "codex"), "codex")}
    found = procs.lab_processes(lab, home, client_homes=homes)
    assert by_home in found and by_cmdline in found
    assert shell_with_lab_env not in found  # not a codex process: left alone
    assert sibling_lab not in found
    assert os.getpid() not in procs.lab_processes(lab, home, exclude=[by_home])
    assert by_home not in procs.lab_processes(lab, home, exclude=[by_home])


def test_terminate_and_liveness(spawn):
    pid = spawn({})
    start = procs.proc_start(pid)
    assert start and procs.is_alive(pid, start) and not procs.is_alive(pid, "0")
    assert procs.terminate([pid], grace=2.0) == [pid]
    assert procs.wait_gone([pid], 2.0) == []
    assert pid in procs.ancestors(pid) and os.getpid() in procs.ancestors()
