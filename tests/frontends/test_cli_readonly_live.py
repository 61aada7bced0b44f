"""Live: every read-only command against the running lab creates, changes and deletes nothing
(issue 16 case 8, Done-when: "compares the trees before and after: identical").

Each read-only command (its --json form, and `relay --lab <cmd>`) runs as the real
`.venv/bin/relay` from an empty working directory, pointed at the lab (its RELAY_HOME, which
holds the clients' homes CLAUDE_CONFIG_DIR and CODEX_HOME, TMPDIR and XDG_RUNTIME_DIR). The
working directory and the whole RELAY_HOME are snapshotted before and after each command
(tests/support/trees.py) and must be identical, except only what the running agents change
by themselves, listed in AGENTS_OWN below with the reason for each.
"""

from __future__ import annotations

import contextlib
import os
from functools import partial
from pathlib import Path

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.agents.claude_code.transcript import turn_written
from relay_repl.system.polling import poll_until_sync
from tests.support.readonly import read_only_commands, touched
from tests.support.sessions import live_session
from tests.support.trees import ANY, snapshot

pytestmark = [pytest.mark.live, pytest.mark.anyio]

AGENTS_OWN = {
    "/lab/logs/": "each client's own debug log (the lab starts Claude with --debug-file); written on its own timers",
    "/lab/claude/.claude.json": "Claude Code rewrites its global config by itself after a turn (atomically: new inode)",
    "/lab/claude/.last-cleanup": "the marker of Claude Code's own retention sweep, which a running session starts by "
    "itself (its housekeeping timer, at most daily; seen in a fresh-clone run once the lab had run ~10 minutes)",
    "/lab/codex/logs_2.sqlite": "Codex's own log database, which the daemon writes continuously",
    "/lab/codex/.tmp/": "the Codex daemon's plugin sync (plugins-clone-*), made and removed on its own schedule",
    "/lab/codex/.sqlite-maintenance.lock": "the Codex daemon's own log-database upkeep lock (the name is in the codex "
    "binary, nowhere in relay), made and removed on the daemon's schedule",
}
"""Paths the running agents change by themselves, with or without relay: not compared."""

SQLITE_SIDE = {
    "-wal": ("ctime",),
    "-shm": ("ctime", "mtime", "content"),
}
"""The side files of a database another process holds open in WAL mode (the Codex daemon's
state, goals and queue databases; the ledger while a relay process or `relay mcp` has it
open). Reading such a database needs them: SQLite, run as root, fchowns both to the database's
owner on open (ctime only, measured), and a reader records its read mark in the -shm, which is
shared memory (mtime, content). Creating, deleting, resizing or rewriting a -wal is still caught."""


AGENTS_DIRS = ("/lab/claude", "/lab/codex/.tmp", "/lab/codex")
"""Directories holding AGENTS_OWN entries: an entry made, renamed or removed there by the agent
changes the directory's mtime (nothing else of the directory may change)."""


def allowed(path: str) -> tuple[str, ...]:
    if any(part in path for part in AGENTS_OWN):
        return (ANY,)
    if path.endswith(AGENTS_DIRS):
        return ("mtime", "ctime")
    for suffix, fields in SQLITE_SIDE.items():
        if path.endswith(suffix):
            return fields
    return ()


async def test_no_read_only_command_touches_the_lab_or_the_working_directory(lab, lab_home, tmp_path):
    async with live_session([True]) as (s, gate, _):
        d = await s.send("claude:alpha", "a delivery for the read-only commands to read", transport="claude-code-socket",
                         timeout=30)
        assert d.outcome == "delivered", d.summary()
        alpha = await s.target("claude:alpha")
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle("alpha", timeout=60))
    transcript = next(x for x in lab.sessions if x.name == "alpha").transcript
    assert transcript and Path(transcript).exists()
    assert alpha.live
    # Claude's record says idle before the turn's last records reach its transcript (they come with
    # its next timed write, and a metadata re-append may follow them): the snapshots start once
    # the transcript proves the turn written, or alpha's own late write reads as a command's change
    msg_id = d.extra.msg_id or ""
    written = await anyio.to_thread.run_sync(
        partial(poll_until_sync, lambda: turn_written(transcript, msg_id), timeout=30, interval=0.05))
    assert written, f"alpha's transcript shows no finished turn for msg_id {msg_id!r} after 30 s:" + tail_records(
        transcript)

    cwd = tmp_path / "empty"
    cwd.mkdir()
    roots = [cwd, Path(lab_home)]
    env = dict(os.environ)
    commands = read_only_commands(d.relay_id or "", transcript, "claude:alpha")
    found: dict[str, list[str]] = {}
    before = snapshot(roots)
    for args in commands:
        ran, diff, before = await anyio.to_thread.run_sync(partial(touched, args, cwd, env, roots, before, allowed))
        assert "Traceback" not in ran.stderr, (args, ran.stderr[-2000:])
        assert ran.json_ok(), (args, ran.stdout[:800])
        if diff:
            found[" ".join(args)] = diff
    assert found == {}, "\n".join(f"relay {c}:\n  " + "\n  ".join(lines) for c, lines in found.items()) + last_records(found)


def last_records(found: dict[str, list[str]]) -> str:
    """The last two records of each changed JSONL file, for the failure message: whether a client
    appended something by itself or something relay caused. (A fresh-clone run beside two CPU
    burners once saw alpha's transcript change during `relay verify`: most likely its own turn's
    last records, which Claude writes on a timer after its record reads idle; the test now waits
    for them, `transcript.turn_written`.)"""
    return "".join(tail_records(path) for lines in found.values() for line in lines
                   if (path := line.split(" ")[1] if line.startswith("changed ") else "").endswith(".jsonl"))


def tail_records(path: str, n: int = 2) -> str:
    """The last `n` records of a JSONL file, cut and quoted (peer text is never printed raw)."""
    with contextlib.suppress(OSError):
        tail = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[-n:]
        return f"\n  last records of {path}:" + "".join(f"\n    {rec[:400]!r}" for rec in tail)
    return ""
