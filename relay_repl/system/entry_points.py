"""The one reader of installed entry points: `entry_points.txt` files on sys.path, parsed by hand.

Standard library only (and no `importlib.metadata`): it serves the agent and transport
registries, and `system/pydantic_plugins.py`, which runs before pydantic is imported.

It is also imported before `relay targets` spawns the Claude listing (system/prefetch.py), where
every import is paid in full on the cold ratio: hence `os` and `sys` alone at the top, and a plain
class rather than a dataclass (`dataclasses` pulls inspect, ast, dis, tokenize; with `typing`,
~20 ms of a cold start before the spawn at load 2, measured with `-X importtime`).
"""

from __future__ import annotations

import os
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    from typing import Any


class EntryPoint:
    """One `name = module:attr` line of a distribution's entry_points.txt (immutable)."""

    __slots__ = ("name", "value", "group")
    name: str
    value: str
    group: str

    def __init__(self, name: str, value: str, group: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "group", group)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"EntryPoint is immutable (cannot set {key!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EntryPoint):
            return NotImplemented
        return (self.name, self.value, self.group) == (other.name, other.value, other.group)

    def __hash__(self) -> int:
        return hash((self.name, self.value, self.group))

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    def load(self) -> Any:
        """The object the line names (importing its module)."""
        import importlib

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
        for dist, text in _distributions(entry):
            if dist in seen:
                continue
            seen.add(dist)
            if text:
                found += _parse(text, group)
    return found


_read: dict[tuple[str, int], list[tuple[str, str]]] = {}


def _distributions(entry: str) -> list[tuple[str, str]]:
    """(normalised name, entry_points.txt text or "") of each distribution in one sys.path folder,
    sorted by folder name. Read once per folder while it is unchanged (its mtime: installing or
    removing a distribution adds or removes a folder in it): one `relay targets` asks for four
    groups (prefetch, agents, transports, pydantic's plugins), each a pass over ~75 files."""
    folder = entry or "."
    try:
        key = (folder, os.stat(folder).st_mtime_ns)
    except OSError:
        return []
    if key in _read:
        return _read[key]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    for name in names:
        if not name.endswith((".dist-info", ".egg-info")):
            continue
        dist = name.rsplit(".", 1)[0].split("-")[0].lower().replace("_", "-").replace(".", "-")
        try:
            with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8") as fh:
                out.append((dist, fh.read()))
        except OSError:
            out.append((dist, ""))  # no entry points, but its name still shadows a later copy
    _read[key] = out
    return out


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
