"""`poll_until`: the one shape of a bounded wait (check, give up at a deadline, say
something on long waits, sleep, again).

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
    deadline = clock() + timeout
    last_report = clock()
    while True:
        result = await check()
        if result is not None:
            return result
        now = clock()
        if now >= deadline:
            return None
        if progress is not None and now - last_report >= progress_every:
            last_report = now
            progress(deadline - now)
        await sleep(interval)
        if max_interval is not None:
            interval = min(interval * 1.5, max(max_interval, interval))
