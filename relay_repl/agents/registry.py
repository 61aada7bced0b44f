"""The one registry of agent kinds, filled from the entry-point group `relay_repl.agents`.

Why entry points: a package installed beside relay_repl adds an agent by declaring

    [project.entry-points."relay_repl.agents"]
    my-kind = "my_package.kind:MyKind"

and nothing in relay_repl changes. The entry point's name is the kind; its object is an
`AgentKind` (agents/kind.py) instance, or a class / zero-argument factory returning one.
relay_repl's own kinds are declared the same way in its pyproject.toml, so an install
whose metadata predates a kind (an editable install not reinstalled) is told so in one line.

Loading is lazy and cached: `kind_names()` reads only the metadata; `kinds()` and
`kind_for()` import the packages on first use.
"""

from __future__ import annotations

from functools import cache

from relay_repl.agents.kind import AgentKind, is_agent_kind, missing_members
from relay_repl.core.errors import RelayError
from relay_repl.core.target import AgentDetail, detail_models
from relay_repl.system.entry_points import EntryPoint, scan_entry_points

GROUP = "relay_repl.agents"


class RegistryError(RelayError):
    """An agent kind's entry point is missing or does not load as an AgentKind."""


@cache
def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in scan_entry_points(GROUP):
        found.setdefault(ep.name, ep)  # first on sys.path wins, as for imports
    if not found:
        raise RegistryError(f"no agent kinds are registered (entry-point group {GROUP!r} is empty): "
                            "reinstall relay_repl (`pip install -e .` in a checkout) so its metadata lists them")
    return found


def kind_names() -> tuple[str, ...]:
    """Every registered kind's name, sorted (reads installed metadata, imports nothing)."""
    return tuple(sorted(_entry_points()))


@cache
def _load(name: str) -> AgentKind:
    ep = _entry_points().get(name)
    if ep is None:
        raise RegistryError(f"no agent kind {name!r} is registered (known: {', '.join(kind_names())})")
    try:
        obj = ep.load()
    except Exception as exc:  # a broken third-party package must not look like a relay bug
        raise RegistryError(f"agent kind {name!r} ({ep.value}) does not load: {type(exc).__name__}: {exc}") from exc
    made = obj() if isinstance(obj, type) or (callable(obj) and not is_agent_kind(obj)) else obj
    if not is_agent_kind(made):
        raise RegistryError(f"agent kind {name!r} ({ep.value}) is not an AgentKind: it lacks "
                            f"{', '.join(missing_members(made))} (see relay_repl/agents/kind.py: subclass AgentKindBase)")
    if made.facts.kind != name:
        raise RegistryError(f"agent kind entry point {name!r} ({ep.value}) says its kind is {made.facts.kind!r}")
    return made  # is_agent_kind checked it


def kinds() -> tuple[AgentKind, ...]:
    """Every registered kind, loaded, in name order."""
    return tuple(_load(n) for n in kind_names())


def kind_for(name: str) -> AgentKind | None:
    """The kind named `name` (a Target's kind), or None when none is registered under it."""
    if name not in _entry_points():
        return None
    return _load(name)


def kind_by_prefix(prefix: str) -> AgentKind | None:
    """The kind an operator means by `prefix` (`claude` in `claude:alpha`), or by its full name."""
    for k in kinds():
        if prefix in (k.facts.prefix, k.facts.kind):
            return k
    return None


def clear() -> None:
    """Forget what was loaded (tests that install a kind at run time)."""
    _entry_points.cache_clear()
    _load.cache_clear()


def _detail_model(name: str) -> type[AgentDetail] | None:
    """The detail model of kind `name` (for a Target built from plain data), or None."""
    try:
        k = kind_for(name)
    except RegistryError:
        return None
    model = k.facts.detail_model if k is not None else None
    return model if isinstance(model, type) and issubclass(model, AgentDetail) else None


detail_models(_detail_model)
