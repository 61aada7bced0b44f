"""Where relay_repl keeps its state, and where it finds the files it ships.

One rule for every part (ledger, REPL history, the lab, the client cache):
`$RELAY_HOME` if set, else `$XDG_STATE_HOME/relay-repl`, else
`~/.local/state/relay-repl`. Tests and the lab point `RELAY_HOME` at a
private directory so nothing of the operator's is touched.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path


def state_dir(create: bool = True) -> Path:
    """The state directory; with `create`, made 0700 if missing.

    Only a command that writes state may create it: the paths below never do, so reading
    (`relay log`, `why`, `whoami`, `targets`, `lab status`...) leaves a fresh machine as it
    found it (issue 16 case 8). Whoever writes under one of them makes its directory."""
    env = os.environ.get("RELAY_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        path = Path(xdg).expanduser() / "relay-repl"
    if create:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def ledger_path() -> Path:
    return state_dir(create=False) / "ledger.sqlite"


def history_path() -> Path:
    """The REPL's history file; the REPL writes it, so its directory is made here."""
    return state_dir() / "repl-history"


def clients_dir() -> Path:
    """Cache of the pinned npm clients (`relay lab install`)."""
    return state_dir(create=False) / "clients"


def lab_dir() -> Path:
    """The one lab this state directory owns (`relay lab up`)."""
    return state_dir(create=False) / "lab"


@cache
def data_dir(package: str) -> Path:
    """The folder of a data package relay ships (`relay_repl.adapters_data`,
    `relay_repl.recipes_data`) as the import system resolves it: the copies inside an installed
    wheel, or in a checkout the top-level folder its editable install maps onto that name. Never
    a path guessed from the source tree. `importlib.util.find_spec` is the lookup
    `importlib.resources.files` makes for a package on disk, without importing
    importlib.resources (about 15 ms, on the path of `relay targets` and the REPL's start).
    A Path: relay is never imported from a zip. Cached: every target's version status looks up
    its adapter (100 times per `relay targets`), and the answer cannot change while relay runs."""
    from importlib.util import find_spec

    spec = find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise ModuleNotFoundError(f"relay_repl is installed without its data package {package}: reinstall it")
    return Path(locations[0])


def inbox_dir(create: bool = True) -> Path:
    """Where running inboxes keep their socket and record; made only by one that opens."""
    d = state_dir(create=create) / "inbox"
    if create:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def inbox_socket(pid: int, create: bool = True) -> Path:
    """The inbox socket process `pid` listens on (a plan printed before the inbox opens names it too)."""
    return inbox_dir(create=create) / f"{pid}.sock"
