"""Start each registered kind's session listing before the heavy imports, so they overlap.

`relay targets` is a cold start: about 0.14 s of Python imports, then the listings, each
possibly a process of its own (Claude's `claude agents --json` is a node process, ~0.16 s).
Started first, the two run side by side. Which listing to run is the kind's fact: a kind
declares a standard-library-only module in the entry-point group `relay_repl.prefetch`, with
`prefetch(env) -> (key, argv, env) | None`. This module is standard library only (it is
imported before pydantic and friends) and loads each declared module BY FILE, not by import:
importing `relay_repl.agents.<kind>.listing` would first run the agents package (pydantic and
every agent module, ~0.2 s), so the listing would start only after the imports it was meant to
overlap; `relay notebook run` then waited for it before its first cell.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from types import ModuleType

from relay_repl.system.entry_points import scan_entry_points

GROUP = "relay_repl.prefetch"

_pending: dict[tuple[str, tuple[str, ...]], subprocess.Popen[bytes]] = {}


def wanted(words: list[str]) -> bool:
    """Whether this command line lists targets first: `relay targets`, and `relay notebook run`
    (its first cell needs the targets too); never for `--help`."""
    nb_run = "notebook" in words[:3] and "run" in words[:4]
    return ("targets" in words[:3] or nb_run) and "--help" not in words and "-h" not in words


def _load_by_file(name: str, module: str) -> ModuleType | None:
    """`module` executed from its file under a private name, without its parent packages' __init__."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *rest[:-1], rest[-1] + ".py") if rest else ""
    if not path or not os.path.isfile(path):
        return None
    private = f"_relay_prefetch_{name.replace('-', '_')}"
    if private in sys.modules:
        return sys.modules[private]
    fspec = importlib.util.spec_from_file_location(private, path)
    if fspec is None or fspec.loader is None:
        return None
    mod = importlib.util.module_from_spec(fspec)
    sys.modules[private] = mod
    try:
        fspec.loader.exec_module(mod)
    except Exception:  # a broken third-party listing must not stop the command: discovery runs it later
        del sys.modules[private]
        return None
    return mod


def start(env: dict[str, str] | None = None) -> None:
    """Launch every declared listing now; `take()` hands its process to the kind's provider later."""
    environ = dict(os.environ if env is None else env)
    for ep in scan_entry_points(GROUP):
        mod = _load_by_file(ep.name, ep.value.partition(":")[0].strip())
        try:
            planned = mod.prefetch(environ) if mod is not None else None
        except Exception:
            planned = None
        if planned is None:
            continue
        key, argv, run_env = planned
        slot = (ep.name, tuple(key))
        if slot in _pending:
            continue
        try:
            _pending[slot] = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, env=run_env)
        except OSError:
            pass


def take(name: str, key: tuple[str, ...]) -> subprocess.Popen[bytes] | None:
    """The prefetched listing of entry `name` (the kind) started for `key`, if one is pending."""
    return _pending.pop((name, tuple(key)), None)
