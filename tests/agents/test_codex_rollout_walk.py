"""Finding a thread's rollout under `sessions/YYYY/MM/DD` without walking the tree on every ask
(agents/codex/rollout.py): a verdict on a shared daemon's reply looks up each hosted thread's
rollout, and each lookup walked the whole tree. A listing is kept only while no directory in it
changed; a rollout created, removed or moved is seen at the next ask."""

from __future__ import annotations

import os

import pytest

import relay_repl.agents.codex.rollout as rollout
from relay_repl.agents.codex import rollout_path, scan_rollouts

T1 = "01a22c47-30ae-7fe2-a708-ada5f5f7528b"
T2 = "01a22c47-9a9b-7a32-93e2-e6037fceb54d"


def make(home, day: str, when: str, tid: str):
    d = home / "sessions" / day
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"rollout-{when}-{tid}.jsonl"
    p.write_text('{"type":"session_meta"}\n')
    return p


@pytest.fixture
def listings(monkeypatch):
    """How many directories were listed; RACY 0 so what the test just made may be kept."""
    listed: list[str] = []
    real = os.scandir

    def counting(path):
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    monkeypatch.setattr(rollout, "RACY", 0.0)
    monkeypatch.setattr(rollout, "_listings", {})
    return listed


def test_an_unchanged_tree_is_not_walked_again(tmp_path, listings):
    a = make(tmp_path, "2026/12/04", "2026-12-04T10-00-00", T1)
    b = make(tmp_path, "2026/12/05", "2026-12-05T10-00-00", T2)
    assert scan_rollouts(tmp_path / "sessions", {T1, T2}) == {T1: a, T2: b}
    walked = len(listings)
    assert walked == 5  # sessions, 2026, 12, 04, 05
    for _ in range(3):
        assert rollout_path(tmp_path, T1) == a and rollout_path(tmp_path, T2) == b
    assert len(listings) == walked


def test_a_rollout_created_removed_or_in_a_new_day_is_seen_at_the_next_ask(tmp_path, listings):
    make(tmp_path, "2026/12/04", "2026-12-04T10-00-00", T1)
    assert rollout_path(tmp_path, T2) is None
    later = make(tmp_path, "2026/12/04", "2026-12-04T11-00-00", T2)  # same day directory
    assert rollout_path(tmp_path, T2) == later
    newest = make(tmp_path, "2026/12/05", "2026-12-05T09-00-00", T2)  # a new day: resumed the next morning
    assert rollout_path(tmp_path, T2) == newest
    newest.unlink()
    assert rollout_path(tmp_path, T2) == later


def test_a_directory_changed_just_now_is_listed_again_every_time(tmp_path, listings, monkeypatch):
    """Two files made in one clock tick can leave one mtime: a listing of a directory changed within
    RACY seconds is never reused."""
    monkeypatch.setattr(rollout, "RACY", 2.0)
    make(tmp_path, "2026/12/04", "2026-12-04T10-00-00", T1)
    rollout_path(tmp_path, T1)
    walked = len(listings)
    rollout_path(tmp_path, T1)
    assert len(listings) == 2 * walked
