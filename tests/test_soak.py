"""scripts/soak, fast: it counts per test in how many runs it passed (a test that fails in one run
of two reads 1/2 and makes the exit status 1), and the CPU burners it starts are gone after it,
also when it is stopped mid-run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from libtmux.test.retry import retry_until

SOAK = Path(__file__).resolve().parents[1] / "scripts" / "soak"

FLAKY = """
from pathlib import Path

def test_steady():
    pass

def test_every_other_run():
    runs = Path(__file__).with_name("runs")
    n = int(runs.read_text()) + 1 if runs.exists() else 1
    runs.write_text(str(n))
    assert n % 2 == 0

def test_skipped():
    import pytest
    pytest.skip("never runs")
"""


def burners_of(pid: int) -> list[int]:
    """The busy loops soak started (their parent is soak; they run in sessions of their own)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"while True" in cmd:
                out.append(int(d.name))
    return out


def test_counts_passes_per_test_and_fails_on_a_flake(tmp_path):
    (tmp_path / "test_flaky.py").write_text(FLAKY)
    res = subprocess.run([sys.executable, str(SOAK), "--runs", "2", "--", str(tmp_path / "test_flaky.py")],
                         capture_output=True, text=True, timeout=300)
    rows = dict(re.findall(r"^\S+::(test_\w+) +(\d+/\d+)", res.stdout, re.M))
    assert rows == {"test_steady": "2/2", "test_every_other_run": "1/2", "test_skipped": "0/2"}, res.stdout
    assert "1 failed at least once" in res.stdout and "0/2  (2 skipped)" in res.stdout
    assert res.returncode == 1, res.stdout + res.stderr


def test_all_green_exits_0(tmp_path):
    (tmp_path / "test_green.py").write_text("def test_one():\n    pass\n")
    res = subprocess.run([sys.executable, str(SOAK), "--runs", "1", "--", str(tmp_path / "test_green.py")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "0 failed at least once" in res.stdout, res.stdout
    assert re.findall(r"^\S+::(test_\w+) +(\d+/\d+)", res.stdout, re.M) == [("test_one", "1/1")], res.stdout


def test_burners_are_killed_when_soak_is_stopped(tmp_path):
    (tmp_path / "test_slow.py").write_text("import threading\n\ndef test_slow():\n    threading.Event().wait(60)\n")
    proc = subprocess.Popen([sys.executable, str(SOAK), "--load", "2", "--", str(tmp_path / "test_slow.py")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started: list[int] = []
    try:
        assert retry_until(lambda: len(burners_of(proc.pid)) == 2, 30, raises=False), "no burners started"
        started = burners_of(proc.pid)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 1 and "interrupted" in out, out
        # no wait: soak has reaped its burners before it exits
        assert [p for p in started if os.path.exists(f"/proc/{p}")] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in started:  # when this test fails, no busy loop outlives it (they have their own sessions)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
