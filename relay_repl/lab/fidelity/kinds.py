"""The kinds' own fidelity checks of one group, collected for the group's module.

A kind's fidelity module (agents/<kind>/fidelity.py) holds a table per group of the checks only its
client needs (`DISCOVERY_CHECKS`, `NATIVE_CHECKS`, `TMUX_CHECKS`: {name: async check(lab)}); each group
module (discovery.py, native.py, tmux.py) binds them to its own view of the running lab. One
collector serves the three, so a kind's table reaches every group the same way. Its own module, not
checks.py: the runner imports the group modules, which import this.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from types import ModuleType
from typing import Any

Check = Callable[[], Awaitable[Any]]


def kind_checks(attr: str, bind: Callable[[Callable[[Any], Awaitable[None]]], Check],
                mods: Iterable[ModuleType | None] | None = None) -> dict[str, Check]:
    """Every kind's `attr` table, each check bound to the group's lab view by `bind`, by the kinds' own
    names (unchanged: `relay fidelity --only` and the live tests call them). The modules are every
    registered kind's, or `mods` for a group whose lab runs only some kinds; a kind without the table
    adds none."""
    if mods is None:
        from relay_repl.agents import registry

        mods = [k.checks.fidelity() for k in registry.kinds()]
    return {name: bind(fn) for mod in mods for name, fn in (getattr(mod, attr, None) or {}).items()}
