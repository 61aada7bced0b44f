"""Answering the gate in a real terminal as a person does: `y` then Enter, typed once the
prompt is shown (relay's one gate, session/core/gate.py, approves only that line; keys typed before
the prompt are discarded, so they are never sent early). Both keys go at once and the
approval is awaited as the `approved` line the gate prints. (This helper used to press `y`,
wait up to 2 s for an `approved` that this gate never prints on `y` alone, then press Enter:
2 s lost per prompt.)

A prompt is the one pending when `Proceed? [y/N]` shows after the last `approved` line:
output arriving while a prompt is up (an inbox line) makes the terminal draw the prompt
again, so counting prompt lines would count one prompt twice."""

from __future__ import annotations

from tests.support.tmuxdrive import Screen

PROMPT = "Proceed? [y/N]"


def approvals(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() == "approved")


def _after_last_answer(text: str) -> str:
    lines = text.splitlines()
    last = max((i for i, line in enumerate(lines)
                if line.strip() == "approved" or line.strip().startswith("declined: nothing was done")), default=-1)
    return "\n".join(lines[last + 1:])


def answer_yes(screen: Screen, n: int, *, done: str | None = None, timeout: float = 240) -> bool:
    """Approve the n-th prompt once it is pending; False if `done` shows instead."""
    def ready(t: str) -> bool:
        return (approvals(t) == n - 1 and PROMPT in _after_last_answer(t)) or (done is not None and done in t)

    text = screen.wait_for(ready, timeout=timeout)
    if PROMPT not in _after_last_answer(text):
        return False
    screen.keys("y", "Enter")
    screen.wait_for(lambda t: approvals(t) >= n, timeout=10)
    return True
