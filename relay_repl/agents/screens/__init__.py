"""Pure screen classifiers for the TUIs relay types into, one module per client.

Each client module offers the same three pure functions over `Snapshot`s:

    classify(snapshot) -> ScreenReading                 idle|busy|unknown, composer state, blockers
    payload_visible(snapshot, payload) -> bool          exactly the payload in the composer
    submitted(before, after, payload) -> SubmitHint     screen hints that Enter took

`for_kind(kind)` picks the module for a Target kind. The marks are version-pinned
(see each module) and recorded goldens live in tests/screens/captures/.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import relay_repl.agents.screens.claude_code as claude_code
import relay_repl.agents.screens.codex as codex
from relay_repl.agents.screens.model import BLOCKERS, Cell, ScreenReading, Snapshot, SubmitHint, parse_styles


def for_kind(kind: str) -> ModuleType | None:
    """The classifier module the kind's adapter names (`[screen] classifier`), or None:
    no adapter or no classifier means no typing, ever. A new agent adds an adapter file
    and a module here; nothing else changes."""
    from relay_repl.agents.adapter import AdapterError, load_adapter

    try:
        name = load_adapter(kind).screen.classifier
    except (AdapterError, OSError, ValueError):
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None


__all__ = ["BLOCKERS", "Cell", "ScreenReading", "Snapshot", "SubmitHint", "claude_code", "codex",
           "for_kind", "parse_styles"]
