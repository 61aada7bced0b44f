"""The requests table in the operator's ledger (store/requests.py): once per id, guarded moves, held ones."""

from __future__ import annotations

from relay_repl.core.request import Request
from relay_repl.store.ledger import Ledger
from relay_repl.store.requests import RequestStore, held_requests


def req(rid: str = "beta-1", **kw: object) -> Request:
    return Request.held(id=rid, asker="codex:beta", verdict="verified", evidence="", asker_pid=1, to="claude:alpha",
                        body="hi", want="reply", hop=0, line="l", **kw)  # type: ignore[arg-type]


def test_a_request_is_kept_once_and_survives_a_new_process(tmp_path):
    led = Ledger(tmp_path / "ledger.sqlite")
    store = RequestStore(led)
    assert store.add(req()) is True
    assert store.add(req()) is False, "a replayed id changes nothing"
    led.close()
    again = Ledger(tmp_path / "ledger.sqlite")
    assert [r.id for r in held_requests(again)] == ["beta-1"]
    assert [e.data["state"] for e in again.events(relay_id="beta-1", kind="request")] == ["held"]


def test_a_move_is_guarded_by_the_state_it_expects(tmp_path):
    store = RequestStore(Ledger(tmp_path / "ledger.sqlite"))
    r = req()
    store.add(r)
    assert store.save(r.moved("denied", "no"), expect="held") is True
    assert store.save(r.moved("approved"), expect="held") is False, "decided already: the second decider loses"
    assert store.get("beta-1").state == "denied" and store.held() == []
    assert [x.id for x in store.all()] == ["beta-1"]


def test_a_read_only_ledger_without_the_table_lists_nothing_and_writes_nothing(tmp_path):
    path = tmp_path / "ledger.sqlite"
    import sqlite3

    Ledger(path).close()
    con = sqlite3.connect(path)  # an older ledger: no requests table (now in the ledger's SCHEMA)
    con.execute("DROP TABLE requests")
    con.commit()
    con.close()
    ro = Ledger.read_only_at(path)
    assert held_requests(ro) == [] and RequestStore(ro).get("x-1") is None
    names = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert "requests" not in names


def test_the_last_hop_sent_to_a_session_is_its_exchange(tmp_path):
    led = Ledger(tmp_path / "ledger.sqlite")
    store = RequestStore(led)
    assert store.ledger.last_hop_to("codex:beta") is None
    led.record_sent("op-1", 3, "codex:beta")
    led.record_sent("op-2", 1, "claude:alpha")
    assert store.ledger.last_hop_to("codex:beta") == 3
    led.record_sent("op-3", 0, "codex:beta")  # the operator started a new exchange with it
    assert store.ledger.last_hop_to("codex:beta") == 0
