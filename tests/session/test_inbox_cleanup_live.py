"""Live: crash cleanup never removes a live Claude session's registry files, even when a
leftover relay inbox record names that session's pid (issue 11, item 3).

A leftover record is forged for the lab Claude's pid with another start time (as when a
crashed REPL's pid is reused by a Claude session), naming the Claude's own registry
record, key file and messaging socket; once without stamps and once with stamps taken
from those very files (the worst case). Neither a read-only command nor `relay clean`
may remove any of them, and `claude agents --json` must still list the session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay_repl.session.core.inbox import FileStamp, InboxRecord, inbox_dir, read_records

pytestmark = pytest.mark.live


def relay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, env=os.environ)


def listed() -> dict[str, int]:
    out = subprocess.run(["claude", "agents", "--json"], capture_output=True, text=True, timeout=30, check=True)
    return {a["name"]: a["pid"] for a in json.loads(out.stdout)}


@pytest.mark.parametrize("stamped", [False, True], ids=["no-stamps", "stamps-of-the-live-files"])
def test_a_leftover_record_naming_a_live_claude_pid_removes_nothing(lab, stamped):
    alpha = lab.session("alpha")
    cfg = Path(os.environ["CLAUDE_CONFIG_DIR"])
    record = cfg / "sessions" / f"{alpha.pid}.json"
    live = json.loads(record.read_text())
    assert live["pid"] == alpha.pid and live["procStart"]
    keys = sorted((cfg / "sessions").glob(f"{alpha.pid}.*.key"))
    sock = Path(live["messagingSocketPath"])
    files = [record, *keys, sock]
    assert all(p.exists() for p in files)
    before = {str(p): FileStamp.of(p) for p in files}
    assert listed().get("alpha") == alpha.pid

    other_start = str(int(live["procStart"]) + 1)  # the crashed relay's own start time: not this Claude's
    leftover = InboxRecord(pid=alpha.pid, proc_start=other_start, address="crashed", sender="operator:relay@crashed",
                           socket=str(inbox_dir() / f"{alpha.pid}.sock"), started=0.0,
                           extra_sockets=[str(sock)], owned_files=[str(record), *map(str, keys)],
                           stamps={k: v for k, v in before.items() if v} if stamped else {})
    path = inbox_dir() / f"{alpha.pid}.json"
    path.write_text(leftover.model_dump_json())
    try:
        assert not read_records()[0].live  # a different start time: the record's process is gone
        res = relay("targets", "--json")
        assert res.returncode == 0
        json.loads(res.stdout)
        assert path.exists(), "a read-only command cleaned"
        res = relay("clean")
        assert res.returncode == 0, res.stderr
        assert res.stdout == ""
        assert f"crashed relay pid {alpha.pid}" in res.stderr
        assert "removed" not in res.stderr, res.stderr
        for p in files:
            assert p.exists(), f"{p} of a live Claude session was removed"
            assert FileStamp.of(p) == before[str(p)], f"{p} was touched"
            assert f"left {p}" in res.stderr
        assert listed().get("alpha") == alpha.pid
    finally:
        path.unlink(missing_ok=True)
