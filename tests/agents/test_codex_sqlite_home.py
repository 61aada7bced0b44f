"""Codex's databases moved by `sqlite_home` (config.toml) or `$CODEX_SQLITE_HOME` (issue 32, a field
hazard): discovery, the queue read-back and `relay doctor` read the live databases, not a stale
copy left in CODEX_HOME. The rule is the one measured on Codex 0.171.0 with `codex doctor`
(agents/codex/sqlite_home.py); the queue CLI double follows it too (testing/replay.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from relay_repl.agents.codex.doctor import check_codex_databases, check_codex_sandbox
from relay_repl.agents.codex.sqlite_home import sqlite_home
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger
from relay_repl.testing import replay
from relay_repl.transports.base import StageLog
from relay_repl.transports.durable_queue import DurableQueueTransport
from tests.agents.test_codex_registry import T1, by_id, goals_db, holders, lock, provider, state_db  # noqa: F401
from tests.support.approvals import approved_send

FIX = Path(__file__).parent / "fixtures"
QUEUE = FIX / "codex-0.169.0-queue_1.sqlite"
ROLLOUT = FIX / "codex-0.169.0-rollout-typed.jsonl"
THREAD = "01a22ecc-17f7-7ab1-b82a-e849cb4be152"
PAYLOAD = "[relay/1 from=op to=beta id=op-1 hop=0 want=none] moved"


def test_the_rule_config_then_env_then_codex_home(tmp_path):
    home = tmp_path / "codex"
    home.mkdir()
    assert sqlite_home(home, {}) == (home, "CODEX_HOME", None)
    assert sqlite_home(home, {"CODEX_SQLITE_HOME": str(tmp_path / "env")}).path == tmp_path / "env"
    assert sqlite_home(home, {"CODEX_SQLITE_HOME": "rel"}, cwd=tmp_path).path == tmp_path / "rel"
    assert sqlite_home(home, {"CODEX_SQLITE_HOME": "  "}).path == home
    (home / "config.toml").write_text(f'sqlite_home = "{tmp_path / "cfg"}"\n')
    got = sqlite_home(home, {"CODEX_SQLITE_HOME": str(tmp_path / "env")})
    assert got.path == tmp_path / "cfg" and got.source.startswith("sqlite_home in ")  # config.toml wins
    (home / "config.toml").write_text('sqlite_home = "dbs"\n')
    assert sqlite_home(home, {}).path == home / "dbs"  # relative to CODEX_HOME, as Codex does
    (home / "config.toml").write_text('sqlite_home = "~/dbs"\n')
    assert sqlite_home(home, {}).path == Path(os.path.expanduser("~/dbs"))
    (home / "config.toml").write_text('sqlite_home = ""\n')
    assert sqlite_home(home, {}).path == home


@pytest.mark.parametrize("content, said", [(b"sqlite_home = 5\n", "must be text"), (b"\xff\xfe", "not UTF-8"),
                                           (b"sqlite_home = [", "not valid TOML"), (None, "named pipe")])
def test_a_config_relay_cannot_read_is_said_and_the_next_rule_used(tmp_path, content, said):
    home = tmp_path / "codex"
    home.mkdir()
    cfg = home / "config.toml"
    if content is None:
        os.mkfifo(cfg)  # never opened for a blocking read
    else:
        cfg.write_bytes(content)
    got = sqlite_home(home, {"CODEX_SQLITE_HOME": str(tmp_path / "env")})
    assert got.path == tmp_path / "env" and said in (got.problem or ""), got
    check = check_codex_databases(home, {})
    assert not check.ok and said in check.detail and "config.toml" in check.fix
    if said != "must be text":  # a file that is not TOML at all: the sandbox row says so, never a traceback or a hang
        sandbox = check_codex_sandbox(home)
        assert not sandbox.ok and str(cfg) in sandbox.detail and said in sandbox.detail, sandbox


@pytest.mark.anyio
async def test_discovery_reads_names_and_goals_from_the_moved_databases(tmp_path, holders):  # noqa: F811
    home = tmp_path / "codex-home"
    (home / "thread-writer-locks").mkdir(parents=True)
    moved = tmp_path / "sqlite-elsewhere"
    moved.mkdir()
    (home / "config.toml").write_text(f'sqlite_home = "{moved}"\n')
    lock(home, T1)
    state_db(home, [{"id": T1, "rollout_path": "", "updated_at": 1, "title": "t", "name": "stale-name", "archived": 0}])
    state_db(moved, [{"id": T1, "rollout_path": "", "updated_at": 2, "title": "t", "name": "live-name", "archived": 0}])
    goals_db(moved, [(T1, "active", "keep the suite green")])
    holders(home / "thread-writer-locks" / f"{T1}.lock")
    prov = provider(home, tmp_path)
    ts = by_id(await prov.discover())
    assert ts[T1].name == "live-name" and "state_5.sqlite name=live-name" in ts[T1].identified_by
    assert ts[T1].detail.goal_objective == "keep the suite green" and ts[T1].detail.sqlite_home == str(moved)
    check = check_codex_databases(home, {})
    assert check.ok and str(moved) in check.detail and "state_5.sqlite" in check.detail and "not the live ones" in check.detail


def _target(home: Path, **detail) -> Target:
    return Target(kind="codex", prefix="codex", name="beta", address=THREAD, pid=None, live=True, state="idle",
                  transports=("codex-queue",), identified_by="replay", detail={"codex_home": str(home), **detail})


def _home_with_rollout(tmp_path: Path) -> Path:
    home = tmp_path / "codex"
    rollout = home / "sessions" / "2026" / "11" / "30" / f"rollout-2026-11-30T23-30-57-{THREAD}.jsonl"
    rollout.parent.mkdir(parents=True)
    shutil.copy(ROLLOUT, rollout)
    return home


@pytest.mark.anyio
async def test_the_queue_read_back_finds_our_item_in_the_moved_queue_not_a_stale_copy(tmp_path, monkeypatch):
    """Before: relay read $CODEX_HOME/queue_1.sqlite (a stale, empty copy): our row was not there, so
    the read-back logged 'dequeued' for an item still waiting in the moved queue."""
    home = _home_with_rollout(tmp_path)
    moved = tmp_path / "moved"
    replay.codex_home_from(QUEUE, moved)  # the live queue, where Codex writes
    shutil.copy(QUEUE, home / "queue_1.sqlite")  # the stale copy left behind
    monkeypatch.setenv("CODEX_SQLITE_HOME", str(moved))  # relay and `codex queue` share the environment
    (home / "thread-writer-locks").mkdir()
    lockfile = home / "thread-writer-locks" / f"{THREAD}.lock"
    lockfile.touch()
    target = _target(home, lock=str(lockfile))
    t = DurableQueueTransport("codex-queue", binary=str(replay.codex_cli(tmp_path / "bin")))
    d = Delivery(target=target.spec, transport=t.name)
    log = StageLog(d, Ledger(tmp_path / "ledger.sqlite"))
    with open(lockfile, "a") as held:  # the thread is loaded: a live process (this one) holds its lock
        import fcntl

        fcntl.flock(held, fcntl.LOCK_EX)
        await approved_send(t, d, target, PAYLOAD, log)
        assert d.state == DeliveryState.QUEUED and d.evidence[-1].data["row"] is not None  # our row, read back
        assert [r["id"] for r in replay.queue_rows(moved)] == [d.extra.item_id] and replay.queue_rows(home) == []
        await t.confirm(d, target, PAYLOAD, log, timeout=0.3)
    assert d.state == DeliveryState.QUEUED and "still pending in the queue" in (d.reason or "")
    assert all(e.state != DeliveryState.DEQUEUED for e in d.evidence)
    assert str(moved / "queue_1.sqlite") == str(t.way_of(target).queue_file(target))


@pytest.mark.anyio
async def test_codex_queue_exit_0_for_a_thread_whose_process_exited_is_queued_with_the_reason(tmp_path):
    """`codex queue` exits 0 and prints an item id for a thread whose process has exited: nothing
    will take the item until the thread is resumed. relay says so at once (QUEUED, the reason), never
    waits out its timeout unexplained, and never calls it delivered."""
    home = _home_with_rollout(tmp_path)
    replay.codex_home_from(QUEUE, home)
    (home / "thread-writer-locks").mkdir()
    lockfile = home / "thread-writer-locks" / f"{THREAD}.lock"
    lockfile.touch()  # the file of a thread that was loaded; its holder has exited (nobody flocks it)
    target = _target(home, lock=str(lockfile))
    t = DurableQueueTransport("codex-queue", binary=str(replay.codex_cli(tmp_path / "bin")))
    d = Delivery(target=target.spec, transport=t.name)
    log = StageLog(d, Ledger(tmp_path / "ledger.sqlite"))
    await approved_send(t, d, target, PAYLOAD, log)
    assert d.state == DeliveryState.QUEUED
    assert "has exited" in d.evidence[-1].detail and f"codex resume {THREAD}" in d.evidence[-1].detail
    with anyio.fail_after(10):  # not the 120 s timeout: there is nothing to wait for
        await t.confirm(d, target, PAYLOAD, log, timeout=120)
    assert d.state == DeliveryState.QUEUED and d.outcome != "delivered"
    assert "has exited" in (d.reason or "") and "never re-send" in (d.reason or "")
    assert [r["id"] for r in replay.queue_rows(home)] == [d.extra.item_id]  # still there, for the resume
