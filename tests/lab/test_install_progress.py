"""The client install says how far it is (issue 39): an 800 MB `npm ci` that prints nothing for a
minute looks hung. `run_with_progress` runs the command with its output in the log and, while it
runs, reports the bytes written under node_modules; a real subprocess writes real files here."""

from __future__ import annotations

import sys
import subprocess

import pytest

from relay_repl.lab.install import run_with_progress, tree_bytes

WRITER = """
import os, sys, time
os.makedirs("node_modules/pkg", exist_ok=True)
for i in range(4):
    with open(f"node_modules/pkg/f{i}", "wb") as fh:
        fh.write(b"x" * 2_000_000)
    time.sleep(0.15)
print("npm says done")
sys.exit(int(sys.argv[1]))
"""


def test_progress_names_the_bytes_written_while_it_runs(tmp_path):
    said: list[str] = []
    log = tmp_path / "log"
    with open(log, "wb") as fh:
        code = run_with_progress([sys.executable, "-c", WRITER, "0"], tmp_path, fh, {}, said.append, timeout=30,
                                 every=0.1)
    assert code == 0
    assert said, "no progress line while the install ran"
    assert all(line.strip().startswith("...") and "MB written" in line for line in said)
    assert any(not line.strip().startswith("... 0 MB") for line in said)  # bytes seen growing, not a fixed text
    assert log.read_text().strip() == "npm says done"
    assert tree_bytes(tmp_path / "node_modules") == 8_000_000


def test_exit_status_and_timeout(tmp_path):
    with open(tmp_path / "log", "wb") as fh:
        assert run_with_progress([sys.executable, "-c", WRITER, "3"], tmp_path, fh, {}, lambda s: None,
                                 timeout=30, every=0.1) == 3
    with open(tmp_path / "log2", "wb") as fh, pytest.raises(subprocess.TimeoutExpired):
        run_with_progress([sys.executable, "-c", "import time; time.sleep(30)"], tmp_path, fh, {}, lambda s: None,
                          timeout=0.3, every=0.1)
