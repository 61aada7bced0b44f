"""`poll_until` with a fake clock: no real time passes."""

from __future__ import annotations

import anyio

from relay_repl.system.polling import poll_until


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def run(check, clock: FakeClock, **kw):
    return anyio.run(lambda: poll_until(check, clock=clock, sleep=clock.sleep, **kw))


def test_returns_the_first_non_none_result_without_waiting_further():
    clock, calls = FakeClock(), []

    async def check():
        calls.append(clock.now)
        return "seen" if len(calls) == 3 else None

    assert run(check, clock, timeout=10, interval=0.5) == "seen"
    assert calls == [100.0, 100.5, 101.0] and clock.sleeps == [0.5, 0.5]


def test_gives_up_after_the_timeout_with_one_check_at_the_deadline():
    clock, calls, reports = FakeClock(), [], []

    async def check():
        calls.append(clock.now)
        return None

    assert run(check, clock, timeout=12, interval=1.0, progress=reports.append, progress_every=5) is None
    assert calls[0] == 100.0 and calls[-1] == 112.0 and len(calls) == 13
    assert reports == [7.0, 2.0]  # at t+5 and t+10: seconds left


def test_a_falsy_result_other_than_none_counts():
    clock = FakeClock()

    async def check():
        return 0

    assert run(check, clock, timeout=1, interval=0.1) == 0 and clock.sleeps == []


def test_with_max_interval_the_sleeps_grow_by_half_up_to_the_cap():
    clock = FakeClock()

    async def check():
        return None

    assert run(check, clock, timeout=1.0, interval=0.02, max_interval=0.1) is None
    grown = [0.02, 0.03, 0.045, 0.0675, 0.1, 0.1]
    assert [round(s, 6) for s in clock.sleeps[:6]] == grown and set(clock.sleeps[4:]) == {0.1}


# -- the blocking variant: the same bounds, driven by the same fake clock ----------------------
class FakeSyncClock(FakeClock):
    def sleep_sync(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def run_sync(check, clock: FakeSyncClock, **kw):
    from relay_repl.system.polling import poll_until_sync

    return poll_until_sync(check, clock=clock, sleep=clock.sleep_sync, **kw)


def test_sync_returns_the_first_non_none_result_without_waiting_further():
    clock, calls = FakeSyncClock(), []

    def check():
        calls.append(clock.now)
        return "seen" if len(calls) == 3 else None

    assert run_sync(check, clock, timeout=10, interval=0.5) == "seen"
    assert calls == [100.0, 100.5, 101.0] and clock.sleeps == [0.5, 0.5]


def test_sync_gives_up_after_the_timeout_with_one_check_at_the_deadline_like_the_async_one():
    reports: dict[str, list[float]] = {"async": [], "sync": []}
    calls: dict[str, list[float]] = {"async": [], "sync": []}
    a, b = FakeClock(), FakeSyncClock()

    async def acheck():
        calls["async"].append(a.now)

    def scheck():
        calls["sync"].append(b.now)

    assert run(acheck, a, timeout=12, interval=1.0, progress=reports["async"].append, progress_every=5) is None
    assert run_sync(scheck, b, timeout=12, interval=1.0, progress=reports["sync"].append, progress_every=5) is None
    assert calls["sync"] == calls["async"] and len(calls["sync"]) == 13 and calls["sync"][-1] == 112.0
    assert reports["sync"] == reports["async"] == [7.0, 2.0]


def test_sync_a_falsy_result_counts_and_an_exception_ends_the_wait():
    clock = FakeSyncClock()
    assert run_sync(lambda: 0, clock, timeout=1, interval=0.1) == 0 and clock.sleeps == []

    def dead():
        raise RuntimeError("pane died")

    import pytest

    with pytest.raises(RuntimeError, match="pane died"):
        run_sync(dead, clock, timeout=5, interval=0.1)
    assert clock.sleeps == []


def test_sync_sleeps_grow_like_the_async_ones():
    a, b = FakeClock(), FakeSyncClock()

    async def acheck():
        return None

    assert run(acheck, a, timeout=1.0, interval=0.02, max_interval=0.1) is None
    assert run_sync(lambda: None, b, timeout=1.0, interval=0.02, max_interval=0.1) is None
    assert b.sleeps == a.sleeps and round(b.sleeps[1], 6) == 0.03
