"""Each registered kind's small standard-library rule from an entry-point group, loaded by file.

Why here (system, beside prefetch.py's `load_by_file`): the rules are read both above the agents
package (session/core/outside.py and whoami.py, before pydantic and every kind are imported) and by
it (agents/origin.py: the inbox's verdict skips a kind's full `identify_process` where that kind's
`surely_outside` rule excludes the peer's chain, issue 33); layers import only down, so the one
loader lives below both. Nothing here branches on a kind's name.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (this runs before the heavy imports)
if TYPE_CHECKING:
    from typing import Any

OUTSIDE_GROUP = "relay_repl.surely_outside"
KINDS_GROUP = "relay_repl.agents"  # the agent registry's group (agents/registry.py)


def kind_rules(group: str) -> list[tuple[str, Any]]:
    """Every registered kind's name (entry-point group `relay_repl.agents`, in name order) and its rule
    declared in `group`, loaded by file without the agents package (None: it declares none, or its
    module would not load). The first declaration of a name on sys.path wins, as for the kinds."""
    from relay_repl.system.entry_points import scan_entry_points
    from relay_repl.system.prefetch import load_by_file

    names = sorted({ep.name for ep in scan_entry_points(KINDS_GROUP)})
    declared: dict[str, str] = {}
    for ep in scan_entry_points(group):
        declared.setdefault(ep.name, ep.value)
    out: list[tuple[str, Any]] = []
    for name in names:
        module, _, attr = declared.get(name, "").partition(":")
        mod = load_by_file(name, module.strip(), group) if module else None
        out.append((name, getattr(mod, attr.strip(), None) if mod is not None else None))
    return out
