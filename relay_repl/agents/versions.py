"""The client versions relay_repl's knowledge was measured on, and the gate on them.

Why here and not in the lab: the version policy is a fact about each agent, and the
product (peer registration, discovery) enforces it; the lab only installs what this
module says. The list itself lives in each adapter's toml block
(`verified_versions` in adapters/<kind>.md), its one home; this module reads it.

Code relying on reverse-engineered behaviour calls `require_verified(kind)`, which
refuses any other version with a one-line error. All functions are synchronous
(`--version` runs a subprocess); call them through `anyio.to_thread.run_sync`.
"""

from __future__ import annotations

import json
import os
import time
import shutil
import subprocess
from pathlib import Path

from relay_repl.agents.kind import AgentKind, ClientPin
from relay_repl.agents.plain_facts import parse_version as parse_version  # one home: the plain listing reads it too
from relay_repl.agents.plain_facts import early_version
from relay_repl.agents.plain_facts import verified_all as _verified_here_all  # the one reader of verified-clients.json
from relay_repl.agents.plain_facts import verified_file as verified_file
from relay_repl.agents.plain_facts import verified_here as verified_here
from relay_repl.agents.plain_facts import version_status as plain_version_status
from relay_repl.agents.registry import kind_for, kind_names, kinds
from relay_repl.core.errors import PolicyRefusal

def check_kind(kind: str) -> AgentKind:
    """The registered kind named `kind`; ValueError naming the registered ones otherwise."""
    found = kind_for(kind)
    if found is None:
        raise ValueError(f"unknown client kind {kind!r} (expected one of {', '.join(kind_names())})")
    return found


def pin(kind: str) -> ClientPin:
    """The client `kind` pins (binary, npm package, version), as its agent package says."""
    return check_kind(kind).facts.pin()


def verified_version(kind: str) -> str:
    """The version the lab pins and the gate accepts: the newest verified one
    (the last of the adapter's `verified_versions`)."""
    return check_kind(kind).facts.verified_versions()[-1]


def verified_versions() -> dict[str, str]:
    """{kind: verified version} for every client kind."""
    return {kind: verified_version(kind) for kind in kind_names()}


_version_cache: dict[tuple[str, float], str | None] = {}


def binary_version(binary: str | Path, timeout: float = 20.0, kind: str | None = None) -> str | None:
    """`<binary> --version` parsed to x.y.z; None if it is missing or does not answer.

    Asking a version must write nothing (a read-only command makes no file, not even for a moment:
    issue 16 case 8), yet some clients keep files under their home even for `--version` (Codex
    helper links under $CODEX_HOME/tmp, Gemini CLI's projects.json tmp files): the kind's own
    `version_env()` points its home nowhere; with no `kind`, every registered kind's is set (each
    names only its own client's variables)."""
    path = str(binary)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    key = (os.path.realpath(path), mtime)
    if key in _version_cache:
        return _version_cache[key]
    from relay_repl.system.prefetch import take_version, version_env

    extra: dict[str, str] = {}
    for k in ([check_kind(kind)] if kind is not None else kinds()):
        extra.update(k.facts.version_env)
    env = version_env(dict(os.environ), extra)

    early = take_version(path, env)  # the same question, asked early (a Claude run's plain phase 1)
    if early is not None:
        try:
            version = early_version(early, timeout)  # decoded as text=True would (plain_facts, its one home)
        except TimeoutError:
            return None
        _version_cache[key] = version
        return version
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = parse_version(proc.stdout) if proc.returncode == 0 else None
    _version_cache[key] = version
    return version


def clear_cache() -> None:
    """Forget cached `--version` answers (after an install replaced the binaries)."""
    _version_cache.clear()


def client_version(kind: str, binary: str | Path | None = None) -> str | None:
    """Version of the `kind` client that relay would drive.

    `binary` defaults to the first of the kind's executable on $PATH (under `relay lab env`
    that is the lab's pinned install). None when not installed or not answering.
    """
    exe = pin(kind).binary
    if binary is None:
        found = shutil.which(exe)
        if found is None:
            return None
        binary = found
    return binary_version(binary, kind=kind)


# ---- the version policy: pinned (shipped) or verified on this machine (`relay fidelity`) ----

FIDELITY_HINT = "relay fidelity --clients system"


def record_verified(kind: str, version: str, facts: int) -> Path:
    """Record `kind` `version` as verified on this machine (a passing `relay fidelity`)."""
    check_kind(kind)
    data = _verified_here_all()
    data.setdefault(kind, {})[version] = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                          "facts": facts}
    path = verified_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def version_status(kind: str, version: str | None) -> str:
    """pinned (shipped verified list) | verified (on this machine) | unverified | unknown (no version).

    The rule's one home is plain_facts.version_status (standard library: the plain listings and a Claude
    run's plain first plan apply it before pydantic is loaded); this gives it the kind's own list."""
    if version is None:
        return "unknown"
    known = kind_for(kind)
    if known is None:
        return "unverified"
    return plain_version_status(kind, version, list(known.facts.verified_versions()))


def is_verified(kind: str, version: str | None) -> bool:
    return version_status(kind, version) in ("pinned", "verified")


def unverified_refusal(kind: str, version: str | None, what: str) -> str | None:
    """One line refusing a reverse-engineered path (`what`) on an unverified version, or None."""
    status = version_status(kind, version)
    if status in ("pinned", "verified"):
        return None
    want = verified_version(kind) if kind_for(kind) is not None else "?"
    shown = f"{kind} {version}" if version else f"{kind} (version unknown)"
    return (f"{shown} is not verified: {what} measured on {want} only; "
            f"verify it with `{FIDELITY_HINT}` (or run the pinned {want})")


def require_verified(kind: str, binary: str | Path | None = None) -> str:
    """Return the client's version if it is pinned or verified here; refuse anything else."""
    want = verified_version(kind)
    have = client_version(kind, binary)
    if have is None:
        raise PolicyRefusal(f"{kind} client not found or not answering `--version`; "
                            f"relay_repl is verified on {kind} {want} only (see `relay lab install`)")
    if not is_verified(kind, have):
        raise PolicyRefusal(f"{kind} {have} is not verified: relay_repl relies on behaviour measured on "
                            f"{kind} {want}; verify it with `{FIDELITY_HINT}`, or install {want} (`"
                            f"{pin(kind).install_hint}`) or use the lab (`relay lab install`)")
    return have
