"""`poll_until`: the one shape of a bounded wait (check, give up at a deadline, say
something on long waits, sleep, again); `poll_until_sync` the same for blocking code
(the lab, which drives tmux and reads files outside any event loop).

Why one helper: every transport waits for receiver evidence the same way, and the
deadline arithmetic (check once more at the deadline, progress only after a while)
is easy to get subtly different in each copy. The clock and the sleep are
parameters, so a test drives a wait with a fake clock in no real time.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


class _Deadline:
    """The bounds both waits share: the deadline by `clock`, progress at most every
    `progress_every` seconds, and the interval's growth (so the async and the blocking wait
    cannot drift apart)."""

    def __init__(self, timeout: float, clock: Callable[[], float], progress: Callable[[float], None] | None,
                 progress_every: float, interval: float, max_interval: float | None) -> None:
        self.clock, self.progress, self.progress_every = clock, progress, progress_every
        self.interval, self.max_interval = interval, max_interval
        self.deadline = clock() + timeout
        self.last_report = clock()

    def passed(self) -> bool:
        """After a check that found nothing: True once the deadline is reached (give up), else
        report progress when it is due (the caller sleeps `next_sleep()` and checks again)."""
        now = self.clock()
        if now >= self.deadline:
            return True
        if self.progress is not None and now - self.last_report >= self.progress_every:
            self.last_report = now
            self.progress(self.deadline - now)
        return False

    def next_sleep(self) -> float:
        """The sleep now due; with `max_interval`, the next one grows by half, up to it."""
        due = self.interval
        if self.max_interval is not None:
            self.interval = min(due * 1.5, max(self.max_interval, due))
        return due


async def poll_until(
    check: Callable[[], Awaitable[T | None]],
    *,
    timeout: float,
    interval: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    progress: Callable[[float], None] | None = None,
    progress_every: float = 5.0,
    max_interval: float | None = None,
) -> T | None:
    """Await `check()` until it returns something other than None, and return that; or
    None once `timeout` seconds (by `clock`) have passed. `check` runs at least once, and
    once more after the deadline is reached (a result that arrives during the last sleep
    still counts). `progress(seconds_left)` is called at most every `progress_every`.

    With `max_interval`, the sleeps start at `interval` and grow by half each time up to
    `max_interval`: evidence that usually lands within a few hundred ms is noticed within
    a short interval of landing, and a long wait still costs few checks."""
    bounds = _Deadline(timeout, clock, progress, progress_every, interval, max_interval)
    while True:
        result = await check()
        if result is not None:
            return result
        if bounds.passed():
            return None
        await sleep(bounds.next_sleep())


def poll_until_sync(
    check: Callable[[], T | None],
    *,
    timeout: float,
    interval: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[float], None] | None = None,
    progress_every: float = 5.0,
    max_interval: float | None = None,
) -> T | None:
    """`poll_until` for blocking code, with the same bounds: call `check()` until it returns
    something other than None, and return that; or None once `timeout` seconds (by `clock`)
    have passed. `check` runs at least once, and once more after the deadline is reached.
    `progress(seconds_left)` is called at most every `progress_every`; `max_interval` grows
    the sleeps as there. An exception from `check` ends the wait (a lab session whose pane
    died raises rather than waits it out)."""
    bounds = _Deadline(timeout, clock, progress, progress_every, interval, max_interval)
    while True:
        result = check()
        if result is not None:
            return result
        if bounds.passed():
            return None
        sleep(bounds.next_sleep())
