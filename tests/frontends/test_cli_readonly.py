"""Read-only commands create, change and delete nothing (issue 16 case 8), in a fresh world.

Each read-only command (and its --json form, and `relay --lab <cmd>`) runs as the real
`.venv/bin/relay` from an empty working directory with a RELAY_HOME that does not exist,
and the clients' homes (CLAUDE_CONFIG_DIR, CODEX_HOME), HOME, TMPDIR and XDG_RUNTIME_DIR
private to the test. Every tree is compared before and after: identical, with no exclusion.
Before: `verify` made a SQLite file named `:memory:` in the working directory, `why` and
`log` made ledger.sqlite, `whoami` made inbox/, several made RELAY_HOME itself.
The live half (the lab's own homes and sessions) is test_cli_readonly_live.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.readonly import read_only_commands, run
from tests.support.trees import differences, snapshot

COMMANDS = read_only_commands("nobody.host.1-1", "/nonexistent/transcript.jsonl", None)


def fresh_world(root: Path) -> tuple[Path, dict[str, str]]:
    for d in ("cwd", "home", "tmp", "run"):
        (root / d).mkdir(parents=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "RELAY_HOME": str(root / "relay-home"),  # not created: a first run
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
        "CODEX_HOME": str(root / "codex"),
        "TMPDIR": str(root / "tmp"),
        "XDG_RUNTIME_DIR": str(root / "run"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_CACHE_HOME": str(root / "cache"),
        "USER": os.environ.get("USER", "operator"),
        "LANG": "C.UTF-8",
    }
    if os.environ.get("RELAY_LAB_CLIENTS"):  # `--lab` forms then find the real clients, as an operator's would
        env["RELAY_LAB_CLIENTS"] = os.environ["RELAY_LAB_CLIENTS"]
    return root / "cwd", env


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_a_read_only_command_touches_nothing_in_a_fresh_world(tmp_path, args):
    root = tmp_path / "world"
    cwd, env = fresh_world(root)
    before = snapshot([root])
    ran = run(args, cwd, env)
    assert differences(before, snapshot([root])) == [], (ran.code, ran.stderr[-800:])
    assert ran.code in (0, 1, 2, 4), ran.stderr[-800:]
    assert "Traceback" not in ran.stderr, ran.stderr[-2000:]
    assert ran.json_ok(), ran.stdout[:800]


def world_with_ledger(tmp_path, ledger):
    """A fresh world, with an empty ledger in its RELAY_HOME when `ledger`; and its tree as it is."""
    from relay_repl.store.ledger import Ledger

    root = tmp_path / "world"
    cwd, env = fresh_world(root)
    if ledger:
        Path(env["RELAY_HOME"]).mkdir()
        Ledger(Path(env["RELAY_HOME"]) / "ledger.sqlite").close()
    return root, cwd, env, snapshot([root])


@pytest.mark.parametrize("args", [["deny", "R1"], ["dead", "retry", "nobody.host.1-1"],
                                  ["dead", "drop", "nobody.host.1-1"]], ids=" ".join)
@pytest.mark.parametrize("ledger", [False, True], ids=["no-home", "a-ledger"])
def test_a_decision_on_an_id_relay_does_not_know_changes_nothing(tmp_path, args, ledger):
    """Not read-only commands, but refused ones: `relay deny R1` made RELAY_HOME and a ledger to say
    'no request', `relay dead retry X` opened an inbox (made inbox/) before finding no such letter.
    Refused with one line, exit 2, every tree as it was (old code fails the deny and retry cases)."""
    root, cwd, env, before = world_with_ledger(tmp_path, ledger)
    ran = run(args, cwd, env)
    assert ran.code == 2 and ran.stderr.startswith("relay: ") and ran.stderr.count("\n") == 1, ran.stderr[-800:]
    assert differences(before, snapshot([root])) == [], ran.stderr


@pytest.mark.parametrize("ledger", [False, True], ids=["no-home", "a-ledger"])
def test_a_reply_to_an_id_nobody_sent_changes_nothing(tmp_path, ledger):
    """`relay reply nobody-1 hi` from a shell where no operator ever sent: refused in one line, and
    it no longer makes RELAY_HOME and a ledger to say so (old code fails the no-home case)."""
    root, cwd, env, before = world_with_ledger(tmp_path, ledger)
    ran = run(["reply", "nobody.host.1-1", "hi"], cwd, env)
    assert ran.code != 0 and "was not sent by the operator here" in ran.stderr, ran.stderr[-800:]
    assert "Traceback" not in ran.stderr and ran.stderr.count("\n") == 1, ran.stderr[-800:]
    assert differences(before, snapshot([root])) == [], ran.stderr
