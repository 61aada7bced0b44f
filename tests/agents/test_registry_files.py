"""The clients' registries and the lab's state against hostile files (issue 32): a FIFO, a directory,
a wrong shape or bytes that are not UTF-8 where a record belongs. The target is skipped (listed
stale with the reason) and `relay doctor` names it; nothing hangs (a FIFO's plain open() blocks
until a writer comes), nothing raises.

Each read runs on a thread joined with a bound, so a regression that blocks fails here in seconds
rather than at the suite's timeout."""

from __future__ import annotations

import json
import os
import threading

import anyio
import pytest

from relay_repl.agents.claude_code.doctor import check_records
from relay_repl.agents.codex.doctor import check_codex
from relay_repl.agents.codex.provider import read_session_index
from relay_repl.lab import state as lab_state
from tests.agents.test_claude_registry import cfg, provider  # noqa: F401


def bounded(fn, *args, seconds: float = 10.0):
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn.__name__} blocked (a FIFO opened for a blocking read?)"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_claude_records_that_are_not_records_are_skipped_with_a_reason_and_a_doctor_finding(cfg, tmp_path):  # noqa: F811
    s = cfg / "sessions"
    os.mkfifo(s / "4101.json")
    (s / "4102.json").mkdir()
    (s / "4103.json").write_text("[1, 2]")
    (s / "4104.json").write_bytes(b'{"pid": 4104, "sessionId": "\xff"}')
    (s / "4105.json").write_text('{"pid": "not a number"}')
    p = provider(cfg, tmp_path)
    records, broken = bounded(p._read_records)
    assert records == {} and set(broken) == {"4101", "4102", "4103", "4104", "4105"}
    assert "named pipe" in broken["4101"] and "directory" in broken["4102"]
    assert "must be an object" in broken["4103"] and "pydantic" not in broken["4103"]
    assert "`pid` must be a whole number" in broken["4105"], broken["4105"]
    targets = bounded(lambda: anyio.run(p.discover))
    assert {t.name: (t.live, bool(t.stale_reason)) for t in targets} == {str(n): (False, True) for n in range(4101, 4106)}
    check = bounded(check_records, p)
    assert not check.ok and "5 record(s) skipped" in check.detail and "relay targets" in check.fix


def test_a_codex_session_index_that_is_a_fifo_or_a_directory_never_hangs_and_doctor_names_it(tmp_path):
    home = tmp_path / "codex"
    home.mkdir()
    index = home / "session_index.jsonl"
    os.mkfifo(index)
    assert bounded(read_session_index, index) == {}
    rows = bounded(lambda: anyio.run(check_codex, {"CODEX_HOME": str(home), "HOME": str(tmp_path)}))
    row = next(c for c in rows if c.name == "session_index.jsonl")
    assert not row.ok and "named pipe" in row.detail
    index.unlink()
    index.mkdir()
    assert bounded(read_session_index, index) == {}


@pytest.mark.parametrize("make", ["fifo", "dir", "garbage", "wrong-shape"])
def test_the_labs_state_file_of_any_kind_reads_as_no_state(tmp_path, make):
    path = tmp_path / "lab.json"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "dir":
        path.mkdir()
    else:
        path.write_text("not json" if make == "garbage" else json.dumps({"sessions": "x"}))
    assert bounded(lab_state.load, path) is None


def test_a_real_record_still_reads(cfg, tmp_path):  # noqa: F811
    from tests.agents.test_claude_registry import write_record

    write_record(cfg, os.getpid(), start=None)
    records, broken = provider(cfg, tmp_path)._read_records()
    assert list(records) == [os.getpid()] and broken == {}


@pytest.mark.parametrize("make, said", [("fifo", "named pipe"), ("ui-string", None), ("not-utf8", "not UTF-8"),
                                        ("not-json", "not valid JSON")])
def test_gemini_settings_of_any_shape_are_a_doctor_row_never_a_traceback(tmp_path, make, said):
    """`{"ui": "x"}` raised AttributeError out of `relay doctor`; a FIFO hung it."""
    from relay_repl.agents.gemini_cli.chats import projects
    from relay_repl.agents.gemini_cli.doctor import check_gemini

    gdir = tmp_path / ".gemini"
    gdir.mkdir()
    path = gdir / "settings.json"
    if make == "fifo":
        os.mkfifo(path)
        os.mkfifo(gdir / "projects.json")
    else:
        path.write_bytes({"ui-string": b'{"ui": "x"}', "not-utf8": b'{"a": "\xff"}', "not-json": b"{"}[make])
    rows = bounded(lambda: anyio.run(check_gemini, {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}))
    row = next(c for c in rows if c.name == "Gemini CLI settings")
    assert row.ok == (said is None) and (said is None or said in row.detail), row
    assert bounded(projects, gdir) == {}


def test_a_fifo_record_never_hangs_the_readers_of_one_session(cfg, tmp_path):  # noqa: F811
    """own_address, identify_process, claimed_session and a session the listing names whose record
    `_read_records` could not read each opened `sessions/<pid>.json` with a plain read_bytes(): a FIFO
    planted there blocked relay until a writer came (old code fails every one of these)."""
    from tests.agents.test_claude_registry import fake_claude

    pid = 4101
    os.mkfifo(cfg / "sessions" / f"{pid}.json")
    sock = str(tmp_path / "inbox.sock")
    p = provider(cfg, tmp_path, extra={"CLAUDE_CODE_MESSAGING_SOCKET": sock, "CLAUDE_PID": str(pid)})
    assert bounded(p.own_address) is None
    assert bounded(p.identify_process, pid) is None
    assert bounded(p.claimed_session, "alpha") is None
    exe, _ = fake_claude(tmp_path, [{"pid": pid, "name": "alpha", "status": "idle", "cwd": "/x"}])
    listed = provider(cfg, tmp_path, claude_bin=exe, rule=False)
    targets = bounded(lambda: anyio.run(listed.discover))
    (t,) = targets
    assert not t.live and "named pipe" in (t.stale_reason or ""), t.stale_reason
