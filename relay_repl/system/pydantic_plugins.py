"""pydantic's plugin lookup without `importlib.metadata`, for cold starts.

pydantic asks for its plugins (entry-point group `pydantic`) when it builds its first model;
its loader (`pydantic.plugin._loader`) imports `importlib.metadata`, which pulls email, zipfile,
csv and importlib.resources, then parses every installed distribution's metadata. On the cold
`relay targets` path that was 60-100 ms of CPU at load 6 (measured: `-X importtime`, cProfile),
for a lookup that finds nothing in a normal install. `install()` puts a stand-in loader in
`sys.modules` that reads only the `entry_points.txt` files (system/entry_points.py); when it
finds a pydantic plugin, or plugins are not disabled the way pydantic reads it, the behaviour is
pydantic's own: the stand-in steps aside and the real loader answers.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from typing import Any

NAME = "pydantic.plugin._loader"


def _get_plugins() -> Iterable[Any]:
    """pydantic's `get_plugins()`: () when none is installed, else the real loader's answer."""
    if os.getenv("PYDANTIC_DISABLE_PLUGINS") in ("__all__", "1", "true"):
        return ()
    from relay_repl.system.entry_points import scan_entry_points

    if not scan_entry_points("pydantic"):
        _stub.get_plugins = lambda: ()  # type: ignore[attr-defined]  # cached, as pydantic caches its own scan
        return ()
    if sys.modules.get(NAME) is _stub:
        del sys.modules[NAME]  # the real loader, from now on
    import importlib

    real = importlib.import_module(NAME)
    return real.get_plugins()


_stub = types.ModuleType(NAME, "relay_repl's stand-in for pydantic's plugin loader (see relay_repl/system/pydantic_plugins.py)")
_stub.get_plugins = _get_plugins  # type: ignore[attr-defined]


def install() -> None:
    """Stand in for pydantic's plugin loader, unless it was already imported (then it stays)."""
    sys.modules.setdefault(NAME, _stub)
