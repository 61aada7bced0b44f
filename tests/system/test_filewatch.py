"""Waking on a ledger commit (inotify on its directory), not on the reader's own reads."""

from __future__ import annotations

import os
import struct

import anyio
import pytest

from relay_repl.store.ledger import Ledger
from relay_repl.system.filewatch import DirWatch, parse_events

pytestmark = pytest.mark.anyio


def test_parse_events_reads_names_of_packed_records():
    def rec(mask, name):
        raw = name.encode() + b"\0" * (16 - len(name))
        return struct.pack("iIII", 1, mask, 0, len(raw)) + raw

    assert parse_events(rec(2, "ledger.sqlite-wal") + rec(256, "x")) == [(2, "ledger.sqlite-wal"), (256, "x")]


async def test_a_commit_by_another_connection_wakes_it_and_its_own_reads_do_not(tmp_path):
    path = tmp_path / "ledger.sqlite"
    writer = Ledger(path)
    writer.event("first")
    async with DirWatch(tmp_path, [path.name, f"{path.name}-wal"]) as watch:
        assert watch.how == "inotify"
        assert not await watch.changed(0.2)
        for _ in range(3):  # what a follower does after each wake-up: a fresh read-only handle, read, close
            reader = Ledger.read_only_at(path)
            assert reader.events()
            reader.close()
        assert not await watch.changed(0.3), "the reader woke itself: it would spin"
        writer.event("second")
        assert await watch.changed(2.0)
        assert not await watch.changed(0.1)  # a burst is one wake-up: drained
        with open(tmp_path / "unrelated", "w") as f:
            f.write("x")
        assert not await watch.changed(0.2)


async def test_a_ledger_created_after_the_watch_began_wakes_it(tmp_path):
    async with DirWatch(tmp_path, ["ledger.sqlite", "ledger.sqlite-wal"]) as watch:
        async def later():
            await anyio.sleep(0.1)
            Ledger(tmp_path / "ledger.sqlite").event("hello")

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            assert await watch.changed(3.0)


async def test_without_inotify_it_compares_stats(tmp_path, monkeypatch):
    import relay_repl.system.filewatch as fw

    monkeypatch.setattr(fw, "_libc", lambda: None)
    (tmp_path / "f").write_text("a")
    async with DirWatch(tmp_path, ["f"], fallback=0.05) as watch:
        assert watch.how.startswith("stat every")
        assert not await watch.changed(0.2)
        os.utime(tmp_path / "f", ns=(1, 1))
        assert await watch.changed(1.0)


async def test_a_missing_directory_is_waited_for_then_watched_with_inotify(tmp_path):
    home = tmp_path / "relay-home"
    async with DirWatch(home, ["ledger.sqlite", "ledger.sqlite-wal"], fallback=0.05) as watch:
        assert watch.how.startswith("stat every") and "until" in watch.how
        assert not await watch.changed(0.1)
        home.mkdir()
        assert await watch.changed(2.0) and watch.how == "inotify"
        Ledger(home / "ledger.sqlite").event("first")
        assert await watch.changed(2.0)
