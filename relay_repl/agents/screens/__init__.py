"""What the screen classifiers share: the values they read and return (`model.py`), the one skeleton
each fills with its marks (`skeleton.py`: `Reading`), and finding one.

Each kind's classifier lives in its own package (`claude_code/screen.py`, `codex/screen.py`, ...)
and offers the same three pure functions over `Snapshot`s:

    classify(snapshot) -> ScreenReading                 idle|busy|unknown, composer state, blockers
    payload_visible(snapshot, payload) -> bool          exactly the payload in the composer
    submitted(before, after, payload) -> SubmitHint     screen hints that Enter took

`for_kind(kind)` imports the module the kind's adapter names; a kind's own `screen.classifier()` (AgentKind)
is what transports ask. The marks are version-pinned (see each module) and recorded goldens live
in tests/agents/screens/captures/.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from relay_repl.agents.screens.model import BLOCKERS, Cell, ScreenReading, Snapshot, SubmitHint, parse_styles


def for_kind(kind: str) -> ModuleType | None:
    """The classifier module the kind's adapter names (`[screen] classifier`: a dotted module path,
    or a bare name under this package), or None: no adapter or no classifier means no typing, ever."""
    from relay_repl.agents.adapter import AdapterError, load_adapter

    try:
        name = load_adapter(kind).screen.classifier
    except (AdapterError, OSError, ValueError):
        return None
    try:
        return importlib.import_module(name if "." in name else f"{__name__}.{name}")
    except ImportError:
        return None


__all__ = ["BLOCKERS", "Cell", "ScreenReading", "Snapshot", "SubmitHint", "for_kind", "parse_styles"]
