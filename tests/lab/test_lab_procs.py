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


def _in_new_netns(spawn, env: dict[str, str]) -> int:
    """A `sleep` in a namespace of its own (the lab's netns helper), once it is there."""
    pid = spawn(env, [sys.executable, "-m", "relay_repl.lab.netns", "--unshare", "--", "sleep", "30"])
    host = procs.net_ns(os.getpid())
    assert procs.poll_until_sync(lambda: True if procs.net_ns(pid) not in (None, host) and
                                 procs.cmdline(pid)[:1] == ["sleep"] else None, timeout=10, interval=0.02)
    return pid


@pytest.mark.skipif(subprocess.run([sys.executable, "-m", "relay_repl.lab.netns", "--probe"]).returncode != 0,
                    reason="no network namespaces here")
def test_a_namespace_id_counts_only_while_one_of_the_labs_own_processes_holds_it(tmp_path, spawn):
    """A freed namespace's id can be reused by another lab's new namespace; that lab is not ours.

    Stands in for the reuse: the id we hold names a namespace none of our processes is in (another
    worker's stub server, not ours by HOME or command line). Old code matched it by id alone and
    `relay lab down` SIGTERMed the other lab's stub while it started.
    """
    lab = tmp_path / "lab"
    home = lab / "home"
    env = {"PYTHONPATH": os.pathsep.join(sys.path)}
    others = _in_new_netns(spawn, {**env, "HOME": str(tmp_path / "other-home")})
    ns = procs.net_ns(others)
    assert others not in procs.lab_processes(lab, home, ns)
    # one of ours joins that namespace: now the id is provably ours, and a process found only by it counts
    ours = spawn({**env, "HOME": str(home)},
                 [sys.executable, "-m", "relay_repl.lab.netns", "--enter", str(others), "--", "sleep", "30"])
    assert procs.poll_until_sync(lambda: True if procs.net_ns(ours) == ns and
                                 procs.cmdline(ours)[:1] == ["sleep"] else None, timeout=10, interval=0.02)
    found = procs.lab_processes(lab, home, ns)
    assert ours in found and others in found
