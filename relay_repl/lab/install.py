"""The pinned agent clients: install them for the lab.

`install()` (`relay lab install`) puts exactly the pinned clients into the client cache
(`paths.clients_dir()`, or `$RELAY_LAB_CLIENTS` when set). The pins are the agent kinds' own
(`AgentKind.facts.pin()`: npm package and version, in each kind's package; the lab asks every kind
the lab runs): the npm manifest is built from them here, never kept as a second list. So is
the lockfile: each kind's package ships the lock entries of its own client (`npm-lock.json`,
`AgentKind.facts.npm_lock()`), and when every kind of the set has entries locking its wanted version
(and no two disagree), their merge is the package-lock.json `npm ci` installs with (every
transitive version fixed); another set is installed with `npm install` and says so. All functions here are synchronous (blocking); call
them from async code through `anyio.to_thread.run_sync`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import relay_repl.store.paths as paths
from relay_repl.agents import versions
from relay_repl.agents.registry import kinds
from relay_repl.agents.versions import (
    binary_version,
    check_kind,
    client_version,
    parse_version,
    pin,
    require_verified,
)
from relay_repl.core.errors import LabError

# re-exported for the lab's callers: the policy itself lives in agents.versions
__all__ = ["VERIFIED_VERSIONS", "described", "lab_kinds", "manifest", "merged_lock", "any_clients", "bin_dir", "client_version", "clients_root", "install",
           "install_versions", "installed_versions", "lab_binary", "latest_versions", "node_tools",
           "require_verified", "resolve_clients", "set_root", "system_root"]

def lab_kinds() -> tuple[str, ...]:
    """The kinds the lab runs (those whose package says how: `AgentKind.lab_driver()`), in name order."""
    return tuple(k.facts.kind for k in kinds() if k.lab_driver() is not None)


VERIFIED_VERSIONS: dict[str, str] = {k: versions.verified_version(k) for k in lab_kinds()}
MIN_NODE_MAJOR = 20
NODE_HINT = "install Node.js >= 20 and npm, e.g. apt-get install nodejs npm"

Progress = Callable[[str], object]


def described(got: dict[str, str] | dict[str, str | None]) -> str:
    """`claude-code 2.1.332, codex 0.171.0`: a client set in one phrase."""
    return ", ".join(f"{k} {v}" for k, v in got.items())


def clients_root() -> Path:
    """The npm prefix holding the lab clients: `$RELAY_LAB_CLIENTS` or `paths.clients_dir()`."""
    env = os.environ.get("RELAY_LAB_CLIENTS")
    return Path(env).expanduser().absolute() if env else paths.clients_dir()


def any_clients() -> bool:
    """True when the lab runs whatever clients sit in `clients_root()` (`relay lab up
    --clients`, `relay fidelity`) instead of installing the pinned ones there."""
    return os.environ.get("RELAY_LAB_ANY_CLIENTS") == "1"


def set_root(prefix: Path) -> None:
    """Point this process's lab at the client set in `prefix` (not the pinned cache)."""
    os.environ["RELAY_LAB_CLIENTS"] = str(prefix)
    os.environ["RELAY_LAB_ANY_CLIENTS"] = "1"


def bin_dir() -> Path:
    return clients_root() / "node_modules" / ".bin"


def lab_binary(kind: str) -> Path:
    return bin_dir() / check_kind(kind).facts.pin().binary


def installed_versions() -> dict[str, str | None]:
    return {kind: binary_version(lab_binary(kind), kind=kind) for kind in lab_kinds()}


def manifest(want: dict[str, str], name: str = "relay-repl-lab-clients") -> dict:
    """The npm manifest of a client set {kind: version}, from each kind's own npm package."""
    return {"name": name, "private": True,
            "description": "The agent CLIs relay_repl's lab runs, as each agent kind pins them.",
            "dependencies": {pin(k).npm_package: v for k, v in sorted(want.items())}}


def merged_lock(want: dict[str, str], name: str = "relay-repl-lab-clients") -> dict[str, Any] | None:
    """The package-lock.json of a client set {kind: version}: the kinds' own lock entries
    (`AgentKind.facts.npm_lock()`) merged under the manifest's root, or None when a kind ships none for
    that version or two kinds lock one path differently (then `npm install` resolves the set)."""
    packages: dict[str, Any] = {}
    for kind, version in want.items():
        entries = (check_kind(kind).facts.npm_lock() or {}).get("packages")
        if not isinstance(entries, dict):
            return None
        if (entries.get(f"node_modules/{pin(kind).npm_package}") or {}).get("version") != version:
            return None
        for path, entry in entries.items():
            if packages.setdefault(path, entry) != entry:
                return None
    return {"name": name, "lockfileVersion": 3, "requires": True,
            "packages": {"": {"name": name, "dependencies": dict(sorted(manifest(want, name)["dependencies"].items()))},
                         **dict(sorted(packages.items()))}}


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


def install(progress: Progress = print, kinds: Iterable[str] | None = None) -> dict[str, str]:
    """Install the pinned clients into `clients_root()`; skip when those of `kinds` (default: every
    lab kind; `up` names the kinds it starts) are already right. An install is always the whole
    pinned set (one npm prefix holds them all).

    Returns {kind: version} of `kinds`. Raises LabError (one line) on any failure.
    """
    dest = clients_root()
    need = list(kinds) if kinds is not None else list(VERIFIED_VERSIONS)
    have = {k: v for k, v in installed_versions().items() if k in need}
    if any_clients():
        missing = [kind for kind, v in have.items() if v is None]
        if missing:
            raise LabError(f"no working {' or '.join(missing)} in {bin_dir()}: install that client set first "
                           f"(`relay lab install --KIND VERSION`)")
        progress(f"lab clients from {dest}: {described(have)}")
        return {k: str(v) for k, v in have.items()}
    if have == {k: VERIFIED_VERSIONS[k] for k in need}:
        progress(f"lab clients present in {dest}: {described(have)}")
        return dict(have)  # type: ignore[arg-type]
    _, npm = node_tools()
    locked = merged_lock(VERIFIED_VERSIONS)
    try:
        import json

        dest.mkdir(parents=True, exist_ok=True, mode=0o700)
        (dest / "package.json").write_text(json.dumps(manifest(VERIFIED_VERSIONS), indent=2) + "\n")
        lock = dest / "package-lock.json"
        if locked is not None:
            lock.write_text(json.dumps(locked, indent=2) + "\n")
        elif lock.exists():
            lock.unlink()  # a lock of another set would make npm keep what it locked
    except OSError as exc:
        raise LabError(f"cannot prepare client cache {dest}: {exc.strerror or exc}") from exc
    log = dest / "npm-install.log"
    how = ("the kinds' lockfile entries" if locked is not None
           else "npm (the kinds' lockfile entries do not cover this set: transitive versions resolved now)")
    progress(f"installing {described(VERIFIED_VERSIONS)} with {how} into {dest} (about 800 MB) ...")
    t0 = time.monotonic()
    cmd = ([npm, "ci", "--no-audit", "--no-fund", "--omit-lockfile-registry-resolved", "--loglevel=warn"] if locked is not None
           else [npm, "install", "--no-audit", "--no-fund", "--loglevel=warn"])
    env = dict(os.environ)
    env.setdefault("DISABLE_AUTOUPDATER", "1")
    try:
        with open(log, "wb") as fh:
            returncode = run_with_progress(cmd, dest, fh, env, progress, timeout=1800)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"npm {cmd[1]} timed out after 30 min; see {log}") from exc
    except OSError as exc:
        raise LabError(f"cannot run npm: {exc.strerror or exc}: {NODE_HINT}") from exc
    if returncode != 0:
        tail = _last_error_line(log)
        raise LabError(f"{' '.join(cmd[1:2])} failed (exit {returncode}): {tail}; full log: {log}")
    versions.clear_cache()
    have = installed_versions()
    if have != VERIFIED_VERSIONS:
        raise LabError(f"after npm {cmd[1]} the clients report {have}, expected {VERIFIED_VERSIONS}; see {log}")
    progress(f"installed in {time.monotonic() - t0:.0f}s: {described(have)}")
    return {k: VERIFIED_VERSIONS[k] for k in need}


def tree_bytes(root: Path) -> int:
    """The bytes of every regular file under `root` (0 when it is not there yet); symlinks not followed."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue  # npm moved it meanwhile
            total += st.st_size
    return total


def run_with_progress(cmd: list[str], dest: Path, log: Any, env: dict[str, str], progress: Progress, *,
                      timeout: float, every: float = 5.0) -> int:
    """Run npm with its output in `log`, and every `every` s say how much it has written into
    `dest/node_modules` so far: an 800 MB install that prints nothing for a minute looks hung (issue 39).
    Returns npm's exit status; TimeoutExpired (npm killed) after `timeout` s."""
    proc = subprocess.Popen(cmd, cwd=dest, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    t0 = time.monotonic()
    try:
        while True:
            try:
                return proc.wait(timeout=every)
            except subprocess.TimeoutExpired:
                waited = time.monotonic() - t0
                if waited > timeout:
                    raise subprocess.TimeoutExpired(cmd, timeout) from None
                progress(f"  ... {tree_bytes(dest / 'node_modules') / 1e6:.0f} MB written in {waited:.0f}s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _last_error_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no output"
    errs = [ln for ln in lines if ("ERR" in ln or "npm error" in ln) and "complete log" not in ln
            and not ln.rstrip().endswith(("npm error", "npm ERR!"))]
    said = [ln for ln in errs if " code " not in ln]  # `npm error code ETARGET` says less than the next line
    return (said[:1] or errs[-1:] or lines[-1:] or ["no output"])[0][:300]


# ---- other client sets: any version from npm, or the clients installed on this machine ------


def latest_versions() -> dict[str, str]:
    """{kind: newest version on the npm registry} (`npm view PACKAGE version`)."""
    _, npm = node_tools()
    out: dict[str, str] = {}
    for kind in lab_kinds():
        try:
            proc = subprocess.run([npm, "view", pin(kind).npm_package, "version"], capture_output=True,
                                  text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LabError(f"cannot ask npm for the latest {kind}: {exc}") from exc
        v = parse_version(proc.stdout)
        if proc.returncode != 0 or v is None:
            raise LabError(f"npm view {pin(kind).npm_package} version failed: "
                           f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['no output']}")
        out[kind] = v
    return out


def set_root_for(want: dict[str, str]) -> Path:
    """The npm prefix of one client set: the pinned cache (`clients_root()`: `$RELAY_LAB_CLIENTS`
    when set) for the pinned versions, else
    `<state>/clients-<v1>-<v2>...` (versions in kind order; each set its own, so none replaces another)."""
    if want == VERIFIED_VERSIONS:
        return clients_root()
    return paths.state_dir() / ("clients-" + "-".join(want[k] for k in sorted(want)))


def install_versions(want: dict[str, str], progress: Progress = print) -> Path:
    """Install exactly `want` ({kind: version}) from npm into its own prefix; returns the prefix.
    Skips when already there. Raises LabError (one line) on any failure."""
    for kind, v in want.items():
        check_kind(kind)
        if parse_version(v) != v:
            raise LabError(f"{kind} version {v!r} is not x.y.z (or `latest`)")
    dest = set_root_for(want)
    if want == VERIFIED_VERSIONS:
        install(progress)
        return dest
    have = {kind: binary_version(dest / "node_modules" / ".bin" / pin(kind).binary, kind=kind) for kind in lab_kinds()}
    if have == want:
        progress(f"clients present in {dest}: {described(have)}")
        return dest
    _, npm = node_tools()
    try:
        dest.mkdir(parents=True, exist_ok=True, mode=0o700)
        import json

        (dest / "package.json").write_text(json.dumps(manifest(want, "relay-repl-lab-clients-candidate"), indent=2) + "\n")
    except OSError as exc:
        raise LabError(f"cannot prepare client cache {dest}: {exc.strerror or exc}") from exc
    log = dest / "npm-install.log"
    progress(f"installing {described(want)} into {dest} (about 800 MB) ...")
    env = dict(os.environ)
    env.setdefault("DISABLE_AUTOUPDATER", "1")
    try:
        with open(log, "wb") as fh:
            returncode = run_with_progress([npm, "install", "--no-audit", "--no-fund", "--loglevel=warn"], dest, fh,
                                           env, progress, timeout=1800)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"npm install timed out after 30 min; see {log}") from exc
    except OSError as exc:
        raise LabError(f"cannot run npm: {exc.strerror or exc}: {NODE_HINT}") from exc
    if returncode != 0:
        raise LabError(f"npm install failed (exit {returncode}): {_last_error_line(log)}; full log: {log}")
    versions.clear_cache()
    have = {kind: binary_version(dest / "node_modules" / ".bin" / pin(kind).binary, kind=kind) for kind in lab_kinds()}
    if have != want:
        raise LabError(f"after npm install the clients report {have}, expected {want}; see {log}")
    return dest


def system_root() -> Path:
    """A prefix whose node_modules/.bin links to the `claude` and `codex` on $PATH (the
    clients installed on this machine), so the lab can run them. Raises LabError if one is missing."""
    dest = paths.state_dir() / "clients-system"
    bins = dest / "node_modules" / ".bin"
    bins.mkdir(parents=True, exist_ok=True, mode=0o700)
    for kind in lab_kinds():
        found = shutil.which(pin(kind).binary)
        if found is None:
            raise LabError(f"no `{pin(kind).binary}` on PATH: install {kind} "
                           f"(npm i -g {pin(kind).npm_package}) or pick --clients pinned|latest")
        link = bins / pin(kind).binary
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.realpath(found))
    versions.clear_cache()
    return dest


def resolve_clients(which: str, progress: Progress = print) -> tuple[Path, dict[str, str]]:
    """`pinned` | `latest` | `system` | a prefix directory -> (prefix, {kind: version}),
    installing what is missing. Raises LabError."""
    if which == "pinned":
        install(progress)
        root = clients_root()
    elif which == "latest":
        root = install_versions(latest_versions(), progress)
    elif which == "system":
        root = system_root()
    else:
        root = Path(which).expanduser().absolute()
        if not (root / "node_modules" / ".bin").is_dir():
            flags = " ".join(f"--{d.spec.count_flag} VERSION" for k in kinds() if (d := k.lab_driver()) is not None)
            raise LabError(f"{root} holds no node_modules/.bin: use pinned, latest, system or an npm prefix "
                           f"made by `relay lab install {flags}`")
    got = {kind: binary_version(root / "node_modules" / ".bin" / pin(kind).binary, kind=kind) for kind in lab_kinds()}
    missing = [k for k, v in got.items() if v is None]
    if missing:
        raise LabError(f"{', '.join(missing)} in {root} does not answer --version")
    return root, {k: str(v) for k, v in got.items()}
