"""The pinned agent clients: install them for the lab, and gate code on verified versions.

Everything relay_repl knows about Claude Code and Codex internals was measured on the
versions in `VERIFIED_VERSIONS`. Code relying on that reverse-engineered behaviour calls
`require_verified(kind)`, which refuses any other version with a one-line error.

`install()` (`relay lab install`) puts exactly those versions into the client cache
(`paths.clients_dir()`, or `$RELAY_LAB_CLIENTS` when set) with `npm ci` from the shipped
package.json + package-lock.json. All functions here are synchronous (blocking);
call them from async code through `anyio.to_thread.run_sync`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import relay_repl.store.paths as paths
from relay_repl.core.errors import LabError, PolicyRefusal

from relay_repl.lab.layout import CLAUDE, CODEX, KINDS, parse_version

# The one place the verified client versions live.
VERIFIED_VERSIONS: dict[str, str] = {CLAUDE: "2.1.328", CODEX: "0.169.0"}
BINARIES: dict[str, str] = {CLAUDE: "claude", CODEX: "codex"}
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
    _check_kind(kind)
    return bin_dir() / BINARIES[kind]


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown client kind {kind!r} (expected one of {', '.join(KINDS)})")


_version_cache: dict[tuple[str, float], str | None] = {}


def binary_version(binary: str | Path, timeout: float = 20.0) -> str | None:
    """`<binary> --version` parsed to x.y.z; None if it is missing or does not answer."""
    path = str(binary)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    key = (os.path.realpath(path), mtime)
    if key in _version_cache:
        return _version_cache[key]
    env = dict(os.environ)
    env.setdefault("DISABLE_AUTOUPDATER", "1")
    # `codex --version` writes helper links under $CODEX_HOME/tmp: give it a throwaway home
    # so asking a version never touches the operator's ~/.codex.
    scratch = tempfile.mkdtemp(prefix="relay-version-")
    env["CODEX_HOME"] = scratch
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    version = parse_version(proc.stdout) if proc.returncode == 0 else None
    _version_cache[key] = version
    return version


def client_version(kind: str, binary: str | Path | None = None) -> str | None:
    """Version of the `kind` client that relay would drive.

    `binary` defaults to the first `claude` / `codex` on $PATH (under `relay lab env`
    that is the lab's pinned install). None when not installed or not answering.
    """
    _check_kind(kind)
    if binary is None:
        found = shutil.which(BINARIES[kind])
        if found is None:
            return None
        binary = found
    return binary_version(binary)


def require_verified(kind: str, binary: str | Path | None = None) -> str:
    """Return the client's version if it is the verified one; refuse anything else."""
    _check_kind(kind)
    want = VERIFIED_VERSIONS[kind]
    have = client_version(kind, binary)
    if have is None:
        raise PolicyRefusal(f"{kind} client not found or not answering `--version`; "
                            f"relay_repl is verified on {kind} {want} only (see `relay lab install`)")
    if have != want:
        raise PolicyRefusal(f"{kind} {have} is not verified: relay_repl relies on behaviour measured on "
                            f"{kind} {want}; install that version (`npm i -g "
                            f"{_npm_name(kind)}@{want}`) or use the lab (`relay lab install`)")
    return have


def _npm_name(kind: str) -> str:
    return {CLAUDE: "@anthropic-ai/claude-code", CODEX: "@openai/codex"}[kind]


def installed_versions() -> dict[str, str | None]:
    return {kind: binary_version(lab_binary(kind)) for kind in KINDS}


def is_installed() -> bool:
    return installed_versions() == VERIFIED_VERSIONS


def _node_major(node: str) -> int | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout
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
        return dict(have)
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
    _version_cache.clear()
    have = installed_versions()
    if have != VERIFIED_VERSIONS:
        raise LabError(f"after npm ci the clients report {have}, expected {VERIFIED_VERSIONS}; see {log}")
    progress(f"installed in {time.monotonic() - t0:.0f}s: claude-code {have[CLAUDE]}, codex {have[CODEX]}")
    return dict(have)


def _last_error_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no output"
    errs = [ln for ln in lines if "ERR" in ln]
    return (errs or lines or ["no output"])[-1][:300]
