"""Start `claude agents --json` before the heavy imports, so it overlaps them.

`relay targets` is a cold start: about 0.14 s of Python imports, then the
listing, which is a node process of its own (~0.16 s). Started first, the two
run side by side. Standard library only: this module is imported before
pydantic and friends. It lives in `system/`, not `agents/`, because importing
`relay_repl.agents.prefetch` first runs the agents package (pydantic and every
agent module, ~0.2 s), so the listing started only after the imports it was
meant to overlap; `relay notebook run` then waited for it before its first cell.
"""

from __future__ import annotations

import os
import shutil
import subprocess

_pending: dict[tuple[str, str], subprocess.Popen[bytes]] = {}


def wanted(words: list[str]) -> bool:
    """Whether this command line lists targets first: `relay targets`, `relay notebook run`
    (its first cell needs the targets too) and `relay serve --stdio` (the channel is opened for a
    first `targets` or `send`, both of which discover); never for `--help`."""
    nb_run = "notebook" in words[:3] and "run" in words[:4]
    serve = "serve" in words[:3] and "--stdio" in words  # a host's relay: the caller's first request lists or sends
    return ("targets" in words[:3] or nb_run or serve) and "--help" not in words and "-h" not in words


def claude_binary(env: dict[str, str] | os._Environ[str], explicit: str | None = None) -> str | None:
    """The `claude` that discovery runs: an explicit path, $RELAY_CLAUDE_BIN, or PATH."""
    exe = explicit or env.get("RELAY_CLAUDE_BIN")
    if exe:
        return exe if os.access(exe, os.X_OK) else None
    return shutil.which("claude", path=env.get("PATH"))


QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
"""What the listing runs with unless the caller's environment says otherwise: plain
`claude agents --json` (2.1.332) resolves a host name over DNS before it prints (strace: two
connects to port 53), with these it makes no network call at all and printed the same list,
~20% sooner in wall time here. A read-only listing has no business phoning home, and the wait
for the network was on `relay targets`' critical path."""


def listing_env(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """`env` with QUIET's variables added where it does not set them."""
    return {**QUIET, **env}


def start(env: dict[str, str] | None = None) -> None:
    """Launch the listing now; `take()` hands its process to the provider later."""
    environ = listing_env(os.environ if env is None else env)
    exe = claude_binary(environ)
    if exe is None:
        return
    cfg = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".claude")
    if not os.path.isdir(os.path.join(cfg, "sessions")):
        return  # no session registered there: nothing to list, and a first listing writes .claude.json
    key = (exe, environ.get("CLAUDE_CONFIG_DIR", ""))
    if key in _pending:
        return
    try:
        _pending[key] = subprocess.Popen([exe, "agents", "--json"], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ)
    except OSError:
        pass


def take(exe: str, config_dir: str) -> subprocess.Popen[bytes] | None:
    return _pending.pop((exe, config_dir), None)
