"""A recipe run's id and the heading above each of its plans: one standard-library home.

Why here: `relay run`'s first plan is waited for from the command's start (issue 40, goal <= 200 ms),
like `relay send`'s. A plain pre-plan for it (phase 1, before pydantic and the event loop) has to
print the very heading `Runner` prints and name the very run id the run then records, so both take
them from here (session/runs/runner.py calls these), and the run id phase 1 drew is handed to the
runner pinned (`Runner(run_id=...)`) rather than drawn twice.
"""

from __future__ import annotations

import uuid


def new_run_id() -> str:
    """A fresh run id: `run-` and 8 hex digits."""
    return "run-" + uuid.uuid4().hex[:8]


def listing_first(label: str) -> str:
    """The runner's line before a run lists the operator's inbox as a `label` peer (its own plan and y/N)."""
    return f"{label} targets answer natively to a listed peer: listing this inbox first (asks y/N)"


def step_heading(recipe: str, run_id: str, round_: int, rounds: int, index: int, step_kind: str, target: str) -> str:
    """The line above a run step's plan: where the run stands."""
    return f"recipe {recipe}, run {run_id}, round {round_}/{rounds}, step {index}: {step_kind} {target}"
