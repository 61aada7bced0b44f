"""Answering the gate in a real terminal as a person does, with either gate: `y`, then Enter
if the gate still waits for it (the y-then-Enter gate); a gate that takes `y` alone has
printed `approved` by then, and no stray Enter is left to answer the next prompt."""

from __future__ import annotations

from tests.support.tmuxdrive import Screen


def answer_yes(screen: Screen, n: int, *, done: str | None = None, timeout: float = 240) -> bool:
    """Wait for the n-th `Proceed? [y/N]` on screen and approve it; False if `done` shows first."""
    screen.wait_for(lambda t: t.count("Proceed? [y/N]") >= n or (done is not None and done in t), timeout=timeout)
    if done is not None and done in screen.text() and screen.text().count("Proceed? [y/N]") < n:
        return False
    screen.keys("y")
    try:
        screen.wait_for(lambda t: t.count("approved") >= n, timeout=2)
    except AssertionError:
        screen.keys("Enter")
        screen.wait_for(lambda t: t.count("approved") >= n, timeout=10)
    return True
