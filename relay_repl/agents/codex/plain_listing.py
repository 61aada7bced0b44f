"""Codex threads as `relay targets` lists them, with the standard library alone: none yet.

`provider.CodexProvider.discover` lists nothing when its CODEX_HOME does not exist, and neither
does this; with a home, its threads' status (the daemon), panes (footer captures) and versions are
read by the models' path for now, so this returns None there (issue 40: what is left). Loaded by
file (frontends/commands/targets_plain.py; entry-point group `relay_repl.plain_listing`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

KIND = "codex"


def listing(env: Mapping[str, str], panes: Any) -> list[Any] | None:
    """[] when the adapter's CODEX_HOME is not a directory (CodexProvider lists nothing then), else None."""
    from relay_repl.system.prefetch import load_by_file

    facts = load_by_file("plain-facts", "relay_repl.agents.plain_facts", "relay_repl.plain_listing")
    if facts is None:
        return None
    adapter = facts.adapter(KIND)
    if adapter is None:
        return None
    return None if os.path.isdir(facts.registry_base(adapter["registry"], env)) else []
