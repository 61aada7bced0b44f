"""Claude's session listing, `claude agents --json`, as the early prefetch runs it.

Standard library only, and imported by file (system/prefetch.py loads it without running the
agents package, which imports pydantic and every agent module): the listing is a node process of
its own (~0.16 s), started before the heavy imports so the two overlap. Declared in the entry-point
group `relay_repl.prefetch`; the provider (provider.py) runs the same command when no prefetched
process matches, so the command, binary and environment have this one home.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType

QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
"""What the listing runs with unless the caller's environment says otherwise: plain
`claude agents --json` (2.1.332) resolves a host name over DNS before it prints (strace: two
connects to port 53), with these it makes no network call at all and printed the same list,
~20% sooner in wall time here. A read-only listing has no business phoning home, and the wait
for the network was on `relay targets`' critical path."""


def binary(env: Mapping[str, str], explicit: str | None = None) -> str | None:
    """The `claude` that discovery runs: an explicit path, $RELAY_CLAUDE_BIN, or PATH."""
    exe = explicit or env.get("RELAY_CLAUDE_BIN")
    if exe:
        return exe if os.access(exe, os.X_OK) else None
    return which("claude", env.get("PATH"))


def which(name: str, path: str | None) -> str | None:
    """`shutil.which(name, path=path)` for a bare command name, without importing shutil: this
    runs before the spawn of the listing, where shutil's imports (fnmatch, zlib, bz2, lzma) cost
    ~5 ms of the cold start at load 2 (`-X importtime`)."""
    if path is None:
        path = os.environ.get("PATH", os.defpath)  # as shutil.which does
    for d in path.split(os.pathsep) if path else ():
        exe = os.path.join(d, name)
        if os.access(exe, os.X_OK) and not os.path.isdir(exe):
            return exe
    return None


def listing_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with QUIET's variables added where it does not set them."""
    return {**QUIET, **env}


def argv(exe: str) -> list[str]:
    return [exe, "agents", "--json"]


def key(exe: str, env: Mapping[str, str]) -> tuple[str, str]:
    """What makes two listings the same: the binary and the config dir it reads."""
    return (exe, env.get("CLAUDE_CONFIG_DIR", ""))


def prefetch(env: Mapping[str, str]) -> tuple[tuple[str, str], list[str], dict[str, str]] | None:
    """(key, argv, environment) of the listing worth starting now, or None: no binary, or no
    session ever registered there (nothing to list, and a first listing writes .claude.json)."""
    environ = listing_env(env)
    exe = binary(environ)
    if exe is None:
        return None
    cfg = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".claude")
    sessions = os.path.join(cfg, "sessions")
    if not os.path.isdir(sessions):
        return None
    if rule_decides(sessions):
        return None  # discovery applies Claude's own rule to these files: no listing to wait for
    return key(exe, environ), argv(exe), environ


def rule_decides(sessions: str) -> bool:
    """Whether Claude's listing rule (listing_rule.py) decides every record in `sessions`, so the
    provider will not run the listing (a record of an unverified version it may still run it for,
    late: the version check needs the adapters, which this early path does not load)."""
    rule = _rule_module()
    if rule is None:
        return False
    try:
        names = os.listdir(sessions)
    except OSError:
        return False
    files = [(n, *rule.read_record_file(os.path.join(sessions, n))) for n in names]
    return not rule.apply_rule(files).undecided


def _rule_module() -> ModuleType | None:
    """listing_rule.py, beside this file, loaded by file as this module is (system/prefetch.py):
    importing it by name would first run the agents package, the heavy imports this path avoids."""
    import sys

    name = "_relay_prefetch_claude_listing_rule"
    if name in sys.modules:
        return sys.modules[name]
    from importlib.machinery import SourceFileLoader

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "listing_rule.py")
    loader = SourceFileLoader(name, path)
    mod = type(sys)(name)
    mod.__file__, mod.__loader__ = path, loader
    sys.modules[name] = mod
    try:
        loader.exec_module(mod)
    except Exception:  # noqa: BLE001 - the prefetch then starts the listing, as before
        del sys.modules[name]
        return None
    return mod
