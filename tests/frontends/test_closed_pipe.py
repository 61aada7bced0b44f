"""A command whose reader left early exits quietly (issue 39: `relay --lab targets --json | head`
ended in a BrokenPipeError traceback): exit 141, as a command killed by SIGPIPE, nothing on stderr."""

from __future__ import annotations

import subprocess
import sys

import pytest

from relay_repl.store.ledger import Ledger


@pytest.mark.parametrize("words", [["recipes"], ["--fake", "targets", "--json"], ["log"], ["halts"]])
def test_output_into_a_closed_pipe_is_quiet(words, relay_home):
    relay_home.mkdir(parents=True, exist_ok=True)
    led = Ledger(relay_home / "ledger.sqlite")
    for i in range(400):  # enough lines that `log` writes more than once
        led.event("plan", relay_id=f"me-{i}", data={"payload": "x" * 200})
    led.close()
    proc = subprocess.Popen([sys.executable, "-m", "relay_repl", *words], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written: every write is EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""
