"""The relay id counter's one statement (store/ledger_ids.py), shared by `Ledger.next_id` and
`relay send`'s plain pre-plan: one sequence per sender whichever takes it, and a missing or foreign
file is refused without being created."""

from __future__ import annotations

import sqlite3

import pytest

from relay_repl.store.ledger import Ledger
from relay_repl.store.ledger_ids import take_id_at


def test_the_plain_taker_and_the_ledger_share_one_sequence(tmp_path):
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    assert led.next_id("me.h.1") == "me.h.1-1"
    assert take_id_at(str(path), "me.h.1") == "me.h.1-2"
    assert led.next_id("me.h.1") == "me.h.1-3"
    assert take_id_at(str(path), "other.h.2") == "other.h.2-1"
    assert led.peek_next_id("me.h.1") == "me.h.1-4"


def test_a_missing_ledger_is_not_created_and_a_foreign_file_is_refused(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with pytest.raises(sqlite3.Error):
        take_id_at(str(path), "me.h.1")
    assert not path.exists()
    sqlite3.connect(path).execute("CREATE TABLE other (x)").connection.commit()
    with pytest.raises(sqlite3.Error):
        take_id_at(str(path), "me.h.1")
