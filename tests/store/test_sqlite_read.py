"""Reading the ledger (or a client's database) leaves every file as it was (issue 16 case 8)."""

from __future__ import annotations

import os
import sqlite3

import pytest

from relay_repl.core.errors import LedgerError
from relay_repl.store.ledger import Ledger
from relay_repl.store.sqlite_read import connect_read_only


def listing(d):
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in d.iterdir()}


def test_a_quiescent_wal_database_is_read_without_side_files(tmp_path):
    """Plain mode=ro creates -wal and -shm here and cannot remove them (the reason for the helper)."""
    led = Ledger(tmp_path / "ledger.sqlite")
    led.event("plan", relay_id="op-1", data={"payload": "hi"})
    led.close()
    before, dir_mtime = listing(tmp_path), os.stat(tmp_path).st_mtime_ns
    assert set(before) == {"ledger.sqlite"}
    ro = Ledger.read_only_at(tmp_path / "ledger.sqlite")
    assert [e.relay_id for e in ro.events()] == ["op-1"]
    with pytest.raises(LedgerError):
        ro.event("debug-look")
    ro.close()
    assert listing(tmp_path) == before and os.stat(tmp_path).st_mtime_ns == dir_mtime


def test_a_database_held_open_is_read_through_its_wal(tmp_path):
    db = tmp_path / "q.sqlite"
    w = sqlite3.connect(db, isolation_level=None)
    w.execute("PRAGMA journal_mode=WAL")
    w.execute("CREATE TABLE t(x)")
    w.execute("INSERT INTO t VALUES (1)")  # only in the -wal so far
    con = connect_read_only(db)
    assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
    con.close()
    w.close()


def test_a_missing_ledger_reads_as_empty_and_makes_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ro = Ledger.read_only_at(tmp_path / "state" / "ledger.sqlite")
    assert ro.events() == [] and ro.inbox() == [] and ro.active_halt() is None
    with pytest.raises(LedgerError):
        ro.next_id("op")
    ro.close()
    assert list(tmp_path.iterdir()) == []  # no state dir, no ':memory:' file in the working directory
