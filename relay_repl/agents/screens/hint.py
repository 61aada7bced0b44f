"""`SubmitHint`: the screen's evidence after Enter, the one screen value that crosses a boundary.

Why apart from model.py: a delivery stores it (`TmuxProgress.screen_after_enter`, written to the
store and read back), so it stays a pydantic model, while the values a classifier reads and
returns (model.py) are plain, for `relay targets`' standard-library path (issue 40). model.py
still offers it by name (`from relay_repl.agents.screens.model import SubmitHint`), loading this
on first use.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


def _empty() -> list[str]:
    """A Python function, not the builtin `list`: pydantic asks `inspect.signature(factory)`, and a
    builtin's text signature is parsed with tokenize (a cost on first build, for an empty default)."""
    return []


class SubmitHint(BaseModel):
    """Screen evidence after Enter; secondary to receiver evidence, never proof alone."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built on first use

    composer_emptied: bool = False
    payload_in_composer: bool = False
    payload_in_history: bool = False
    turn_running: bool = False
    queued: bool = False
    tab_to_queue: bool = False
    reasons: list[str] = Field(default_factory=_empty)
