"""The native `codex` binary behind the npm package's Node wrapper, to run CLI commands without Node.

Why: `codex` from npm is `@openai/codex/bin/codex.js`, a Node script that finds the
platform package's binary and `execve`s it. Starting Node is most of what a short command
costs: `codex --version` took 180 ms through the wrapper and 8 ms run directly (median of 8
each, in turn, load 7.7 on 2 CPUs), and `codex queue` is on codex-queue's path from the
operator's yes to the item being queued. So relay resolves the binary the way the wrapper
does (0.171.0's `codex.js`) and runs it with the environment the wrapper would give it;
anything unexpected (another install layout, a platform it does not know, a binary not
there) returns None and the wrapper is run as before.

What the wrapper does, and this module copies:
- the platform package `@openai/codex-<os>-<arch>` is found as Node's `require.resolve`
  would from `bin/codex.js` (each ancestor's `node_modules`), else the package's own `vendor/`;
- the binary is `vendor/<target triple>/bin/codex`;
- the environment gains `CODEX_MANAGED_PACKAGE_ROOT` (the package root, resolved) and one
  `CODEX_MANAGED_BY_*` flag. The wrapper picks bun/pnpm/vite-plus/npm from the install's
  surroundings; only Codex's update hint reads it, and relay says npm (its own installs).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PLATFORMS = {
    ("Linux", "x86_64"): ("x86_64-unknown-linux-musl", "codex-linux-x64"),
    ("Linux", "aarch64"): ("aarch64-unknown-linux-musl", "codex-linux-arm64"),
    ("Darwin", "x86_64"): ("x86_64-apple-darwin", "codex-darwin-x64"),
    ("Darwin", "arm64"): ("aarch64-apple-darwin", "codex-darwin-arm64"),
}
MANAGED_BY = ("CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_BY_BUN", "CODEX_MANAGED_BY_PNPM", "CODEX_MANAGED_BY_VITE_PLUS")


def native_codex(command: str, platform: tuple[str, str] | None = None) -> tuple[str, dict[str, str]] | None:
    """(native binary, environment additions) for the npm wrapper at `command`, or None
    when `command` is not that wrapper or its binary is not where the wrapper looks."""
    try:
        script = Path(os.path.realpath(command))
    except (OSError, ValueError):
        return None
    if script.name != "codex.js" or script.parent.name != "bin":
        return None
    root = script.parent.parent
    try:
        if json.loads((root / "package.json").read_text()).get("name") != "@openai/codex":
            return None
    except (OSError, ValueError, AttributeError):
        return None
    uname = os.uname()
    triple, package = PLATFORMS.get(platform or (uname.sysname, uname.machine), (None, None))
    if triple is None or package is None:
        return None
    vendor = root / "vendor"
    for d in (script.parent, *script.parent.parents):  # Node's module lookup from bin/codex.js
        if d.name == "node_modules":
            continue
        found = d / "node_modules" / "@openai" / package
        if (found / "package.json").is_file():
            vendor = found / "vendor"
            break
    exe = vendor / triple / "bin" / "codex"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        return None
    return str(exe), {"CODEX_MANAGED_PACKAGE_ROOT": str(root), "CODEX_MANAGED_BY_NPM": "1"}


def codex_command_env(command: str, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """What to run for `command` (the native binary when it is the npm wrapper) and with
    which environment (`env`, plus what the wrapper would have set)."""
    native = native_codex(command)
    if native is None:
        return command, env
    exe, extra = native
    return exe, {**{k: v for k, v in env.items() if k not in MANAGED_BY}, **extra}
