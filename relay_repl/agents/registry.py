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

import importlib
import os
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

from relay_repl.agents.kind import AgentKind
from relay_repl.core.errors import RelayError
from relay_repl.core.target import AgentDetail, detail_models

GROUP = "relay_repl.agents"


class RegistryError(RelayError):
    """An agent kind's entry point is missing or does not load as an AgentKind."""


@dataclass(frozen=True)
class EntryPoint:
    """One `name = module:attr` line of a distribution's entry_points.txt."""

    name: str
    value: str
    group: str

    def load(self) -> Any:
        """The object the line names (importing its module)."""
        module, _, attr = self.value.partition(":")
        obj: Any = importlib.import_module(module.strip())
        for part in attr.split("[")[0].strip().split(".") if attr else ():
            obj = getattr(obj, part)
        return obj


def scan_entry_points(group: str) -> list[EntryPoint]:
    """The entry points of `group` in every distribution on sys.path (the first of a name on the
    path wins, as for imports).

    Why not `importlib.metadata.entry_points(group=...)`: importing it and parsing every
    distribution's METADATA to learn its name (~75 here) cost 30-50 ms of each cold start of
    `relay targets`, a command benchmarked against the client's own listing (measured); this
    reads only the `entry_points.txt` files (~1.5 ms)."""
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            dist = name.rsplit(".", 1)[0].split("-")[0].lower().replace("_", "-").replace(".", "-")
            if dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            found += _parse(text, group)
    return found


def _parse(text: str, group: str) -> list[EntryPoint]:
    """The `[group]` section of an entry_points.txt (ini: `name = module:attr`)."""
    out: list[EntryPoint] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            inside = line == f"[{group}]"
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            out.append(EntryPoint(name=name.strip(), value=value.strip(), group=group))
    return out


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
    made = obj() if isinstance(obj, type) or (callable(obj) and not isinstance(obj, AgentKind)) else obj
    if not isinstance(made, AgentKind):
        raise RegistryError(f"agent kind {name!r} ({ep.value}) is not an AgentKind (see relay_repl/agents/kind.py)")
    if made.kind != name:
        raise RegistryError(f"agent kind entry point {name!r} ({ep.value}) says its kind is {made.kind!r}")
    return made


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
        if prefix in (k.prefix, k.kind):
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
    model = getattr(k, "detail_model", None) if k is not None else None
    return model if isinstance(model, type) and issubclass(model, AgentDetail) else None


detail_models(_detail_model)
