from __future__ import annotations

import os
import subprocess
import sys

from relay_repl import __version__
from relay_repl.frontends.cli import build_parser
from relay_repl.store.ledger import Ledger

RELAY = [sys.executable, "-m", "relay_repl"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RELAY, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
                          env=os.environ)


def test_help_explains_every_subcommand():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    res = run("--help")
    assert res.returncode == 0
    for name in sub.choices:
        assert f"    {name} " in res.stdout, name
        assert sub.choices[name].description, f"{name} --help has no description"
    assert "y/N" in res.stdout and "examples:" in res.stdout
    lab = run("lab", "--help")
    for name in ("install", "up", "status", "down", "env", "attach"):
        assert name in lab.stdout


def test_version():
    res = run("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"relay {__version__}"


def test_why_and_log(relay_home):
    led = Ledger(relay_home / "ledger.sqlite")
    led.event("plan", relay_id="me-1", data={"payload": "x"})
    led.event("answer", relay_id="me-1", data={"approved": False})
    res = run("why", "me-1")
    assert res.returncode == 0 and "plan" in res.stdout and "answer" in res.stdout
    res = run("why", "nobody-9")
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "relay log" in res.stderr
    res = run("log", "--json", "-n", "1")
    assert res.returncode == 0 and '"kind": "answer"' in res.stdout


def test_fake_targets_table():
    res = run("--fake", "targets")
    assert res.returncode == 0
    assert res.stdout.splitlines()[0].split() == ["TARGET", "PID", "STATE", "PANE", "TRANSPORTS"]
    assert "fake:inbox" in res.stdout
