from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from relay_repl.core.errors import RelayError
from relay_repl.store.ledger import Ledger


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "ledger.sqlite")
    yield led
    led.close()


def test_wal_mode(ledger):
    con = sqlite3.connect(ledger.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_ids_are_prefixed_and_never_repeat(ledger, tmp_path):
    assert ledger.next_id("alpha") == "alpha-1"
    assert ledger.next_id("alpha") == "alpha-2"
    assert ledger.next_id("beta") == "beta-1"
    other = Ledger(tmp_path / "ledger.sqlite")  # a second handle, as another process would hold
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda i: (ledger if i % 2 else other).next_id("alpha"), range(200)))
    assert len(set(ids)) == 200
    assert sorted(int(i.rsplit("-", 1)[1]) for i in ids) == list(range(3, 203))


def test_seen_ids_detect_duplicates(ledger):
    assert ledger.mark_seen("peer-1", hop=1, peer="codex:x") is True
    assert ledger.mark_seen("peer-1", hop=1, peer="codex:x") is False
    assert ledger.sightings("peer-1") == 2
    assert ledger.mark_seen("peer-10", hop=0) is True  # a prefix is a different id
    ledger.record_sent("me-1", 0, "claude:alpha")
    assert ledger.was_sent("me-1") and not ledger.was_sent("peer-1")


def test_halts(ledger):
    assert ledger.active_halt() is None
    ledger.halt("peer asked relay-halt", by="codex:x")
    assert ledger.active_halt().reason == "peer asked relay-halt"
    assert ledger.clear_halts() == 1
    assert ledger.active_halt() is None
    assert [e.kind for e in ledger.events()] == ["halt", "halt-cleared"]


def test_event_log_is_append_only_and_filterable(ledger):
    a = ledger.event("plan", delivery="d1", relay_id="me-1", data={"payload": "x"})
    b = ledger.event("answer", delivery="d1", relay_id="me-1", data={"approved": False})
    ledger.event("plan", delivery="d2", relay_id="me-2", data={})
    assert b == a + 1
    assert [e.kind for e in ledger.events(relay_id="me-1")] == ["plan", "answer"]
    assert ledger.events(delivery="d1")[1].data == {"approved": False}
    assert [e.seq for e in ledger.events(since=a)] == [b, b + 1]


def test_unopenable_ledger_is_one_clear_error(tmp_path):
    bad = tmp_path / "dir-not-file"
    bad.mkdir()
    with pytest.raises(RelayError, match="cannot open the ledger") as err:
        Ledger(bad)
    assert "\n" not in str(err.value)


WRITER = textwrap.dedent(
    """
    import sys
    from relay_repl.store.ledger import Ledger
    led = Ledger(sys.argv[1])
    i = 0
    while True:
        i += 1
        n = led.next_id("w")
        led.event("tick", relay_id=n, data={"i": i, "pad": "x" * 2000})
        print(i, flush=True)   # printed only after both commits returned
    """
)


@pytest.mark.parametrize("run", range(3))
def test_survives_kill_9_mid_write(tmp_path, run):
    """A real writer process is SIGKILLed while writing; every acknowledged row
    survives, nothing is doubled, and the file is intact."""
    path = tmp_path / "ledger.sqlite"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True)
    acked = 0
    deadline = time.time() + 30
    while acked < 150 + 100 * run and time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert acked >= 150, "the writer never got going"

    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    ticks = [r[0] for r in con.execute("SELECT json_extract(data, '$.i') FROM events WHERE kind='tick' ORDER BY seq")]
    assert len(ticks) == len(set(ticks)), "an event was duplicated"
    assert ticks == list(range(1, len(ticks) + 1)), "an event was lost in the middle"
    assert len(ticks) >= acked, "an acknowledged event was lost"
    (n,) = con.execute("SELECT n FROM counters WHERE sender='w'").fetchone()
    assert n in (len(ticks), len(ticks) + 1)  # the id may be taken just before the kill, never reused
    # and the ledger keeps working after the crash
    led = Ledger(path)
    assert led.next_id("w") == f"w-{n + 1}"
