"""The pinned agent clients: install them for the lab.

`install()` (`relay lab install`) puts exactly the verified versions (the agents' own
policy, `relay_repl.agents.versions`, read from each adapter's `verified_versions`)
into the client cache (`paths.clients_dir()`, or `$RELAY_LAB_CLIENTS` when set) with
`npm ci` from the shipped package.json + package-lock.json, whose pins a fast test
holds equal to the adapters'. All functions here are synchronous (blocking); call
them from async code through `anyio.to_thread.run_sync`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import relay_repl.store.paths as paths
from relay_repl.agents import versions
from relay_repl.agents.versions import (
    BINARIES,
    CLAUDE,
    CODEX,
    KINDS,
    binary_version,
    check_kind,
    client_version,
    parse_version,
    require_verified,
)
from relay_repl.core.errors import LabError

# re-exported for the lab's callers: the policy itself lives in agents.versions
__all__ = ["BINARIES", "VERIFIED_VERSIONS", "bin_dir", "client_version", "clients_root", "install",
           "installed_versions", "lab_binary", "node_tools", "require_verified"]

VERIFIED_VERSIONS: dict[str, str] = versions.verified_versions()
MIN_NODE_MAJOR = 20
NODE_HINT = "install Node.js >= 20 and npm, e.g. apt-get install nodejs npm"

Progress = Callable[[str], object]


def clients_root() -> Path:
    """The npm prefix holding the lab clients: `$RELAY_LAB_CLIENTS` or `paths.clients_dir()`."""
    env = os.environ.get("RELAY_LAB_CLIENTS")
    return Path(env).expanduser().absolute() if env else paths.clients_dir()


def bin_dir() -> Path:
    return clients_root() / "node_modules" / ".bin"


def lab_binary(kind: str) -> Path:
    check_kind(kind)
    return bin_dir() / BINARIES[kind]


def installed_versions() -> dict[str, str | None]:
    return {kind: binary_version(lab_binary(kind)) for kind in KINDS}


def _node_major(node: str) -> int | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    v = parse_version(out)
    return int(v.split(".")[0]) if v else None


def node_tools() -> tuple[str, str]:
    """(node, npm) paths, or LabError with the install hint."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise LabError(f"node/npm not found: {NODE_HINT}")
    major = _node_major(node)
    if major is None or major < MIN_NODE_MAJOR:
        raise LabError(f"node {major if major is not None else '?'} is too old or broken: {NODE_HINT}")
    return node, npm


def _shipped(name: str) -> bytes:
    return resources.files("relay_repl.lab").joinpath("clients", name).read_bytes()


def install(progress: Progress = print) -> dict[str, str]:
    """Install the pinned clients into `clients_root()`; skip when already right.

    Returns {kind: version}. Raises LabError (one line) on any failure.
    """
    dest = clients_root()
    have = installed_versions()
    if have == VERIFIED_VERSIONS:
        progress(f"lab clients present in {dest}: claude-code {have[CLAUDE]}, codex {have[CODEX]}")
        return dict(VERIFIED_VERSIONS)
    _, npm = node_tools()
    try:
        dest.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in ("package.json", "package-lock.json"):
            (dest / name).write_bytes(_shipped(name))
    except OSError as exc:
        raise LabError(f"cannot prepare client cache {dest}: {exc.strerror or exc}") from exc
    log = dest / "npm-install.log"
    progress(f"installing claude-code {VERIFIED_VERSIONS[CLAUDE]} and codex {VERIFIED_VERSIONS[CODEX]} "
             f"from the npm registry into {dest} (about 800 MB) ...")
    t0 = time.monotonic()
    cmd = [npm, "ci", "--no-audit", "--no-fund", "--omit-lockfile-registry-resolved", "--loglevel=warn"]
    env = dict(os.environ)
    env.setdefault("DISABLE_AUTOUPDATER", "1")
    try:
        with open(log, "wb") as fh:
            proc = subprocess.run(cmd, cwd=dest, stdout=fh, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=env, timeout=1800)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"npm ci timed out after 30 min; see {log}") from exc
    except OSError as exc:
        raise LabError(f"cannot run npm: {exc.strerror or exc}: {NODE_HINT}") from exc
    if proc.returncode != 0:
        tail = _last_error_line(log)
        raise LabError(f"npm ci failed (exit {proc.returncode}): {tail}; full log: {log}")
    versions.clear_cache()
    have = installed_versions()
    if have != VERIFIED_VERSIONS:
        raise LabError(f"after npm ci the clients report {have}, expected {VERIFIED_VERSIONS}; see {log}")
    progress(f"installed in {time.monotonic() - t0:.0f}s: claude-code {have[CLAUDE]}, codex {have[CODEX]}")
    return dict(VERIFIED_VERSIONS)


def _last_error_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no output"
    errs = [ln for ln in lines if "ERR" in ln]
    return (errs or lines or ["no output"])[-1][:300]
