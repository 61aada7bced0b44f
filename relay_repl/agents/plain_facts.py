"""An adapter's facts and the version policy's word, read with the standard library alone.

For `relay targets`' plain path (frontends/targets_plain.py): each kind's
`plain_listing.py` is loaded by file, without the agents package (pydantic, every agent module),
and reads here what `agents/adapter.py` and `agents/versions.py` give the providers. Exactly
what they give, or None: with `$RELAY_ADAPTERS_DIR` set (tests, experiments), or a toml block
these checks do not accept, the caller returns None and the listing goes through the models,
which validate the file and name what is wrong with it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relay_repl.store.adapter_files import TOML_BLOCK as TOML_BLOCK  # its one home (agents/adapter.py reads it too)

if TYPE_CHECKING:
    from pathlib import Path

STATES = ("idle", "busy", "waiting", "unknown", "never-idle")
ADAPTER_KEYS = {"kind", "prefix", "verified_versions", "facts", "registry", "listing", "transports", "status", "screen",
                "latencies"}
"""AdapterSpec's fields: a block with another key is refused by the model, so not read here."""


_VERSION_RE = re.compile(r"(\d+\.\d+\.\d+)")


def parse_version(text: str) -> str | None:
    """`2.1.328 (Claude Code)` / `codex-cli 0.169.0` -> the first x.y.z, or None."""
    m = _VERSION_RE.search(text or "")
    return m.group(1) if m else None


def early_version(listing: Any, timeout: float) -> str | None:
    """The version an early `<client> --version` process (system/prefetch.Listing) answered, read as
    binary_version reads `subprocess.run(..., text=True)`'s: None when it failed; TimeoutError after
    `timeout` seconds (the process killed)."""
    import locale

    code, out, _ = listing.result(timeout)
    return parse_version(out.decode(locale.getpreferredencoding(False))) if code == 0 else None


def _strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())


def adapter(kind: str) -> dict[str, Any] | None:
    """The shipped `adapters/<kind>.md` toml block as a dict, when the fields a listing reads are of
    the types AdapterSpec takes as they are; else None (the models then read or refuse it)."""
    if os.environ.get("RELAY_ADAPTERS_DIR"):
        return None
    import tomllib

    from relay_repl.store.paths import data_dir

    try:
        with open(os.path.join(data_dir("relay_repl.adapters_data"), f"{kind}.md"), encoding="utf-8") as f:
            blocks = TOML_BLOCK.findall(f.read())
        if len(blocks) != 1:
            return None
        data = tomllib.loads(blocks[0])
    except (OSError, ValueError, ModuleNotFoundError):
        return None
    reg, screen = data.get("registry"), data.get("screen")
    marks = screen.get("marks", {}) if isinstance(screen, dict) else None
    ok = (set(data) <= ADAPTER_KEYS and data.get("kind") == kind and isinstance(data.get("prefix"), str)
          and _strs(data.get("verified_versions")) and bool(data["verified_versions"])
          and _str_map(data.get("status", {})) and all(v in STATES for v in data.get("status", {}).values())
          and isinstance(reg, dict) and isinstance(reg.get("env"), str) and isinstance(reg.get("default"), str)
          and _str_map(reg.get("paths", {}))
          and isinstance(marks, dict) and all(isinstance(k, str) and _strs(v) for k, v in marks.items()))
    return data if ok else None


def registry_base(reg: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """adapter.RegistrySpec.base: `$<env>` or the default, `~` as $HOME, as a Path spells it."""
    from pathlib import Path

    raw = env.get(reg["env"]) or reg["default"]
    if raw.startswith("~"):
        raw = (env.get("HOME") or str(Path.home())) + raw[1:]
    return str(Path(raw))


def version_status(kind: str, version: str | None, verified_versions: list[str]) -> str:
    """versions.version_status for a registered kind whose adapter lists `verified_versions`."""
    if version is None:
        return "unknown"
    if version in verified_versions:
        return "pinned"
    if version in verified_here(kind):
        return "verified"
    if f"{kind}={version}" in os.environ.get("RELAY_FIDELITY_CANDIDATE", "").split(","):
        return "verified"
    return "unverified"


def verified_file() -> Path:
    """Where `relay fidelity` records the versions it verified on this machine."""
    from relay_repl.store.paths import state_dir

    return state_dir(create=False) / "verified-clients.json"


def verified_all() -> dict[str, Any]:
    """{kind: {version: {when, facts}}} as `relay fidelity` recorded them here; unreadable is nothing (a send
    stays gated). The one reader of that file: agents/versions.py re-exports it for the models."""
    from relay_repl.core.errors import FileProblem
    from relay_repl.store.loader import read_text

    try:  # the one loader (a FIFO there never hangs)
        text = read_text(verified_file(), "run `relay fidelity` again", missing_ok=True)
        data = json.loads(text) if text else {}
    except (FileProblem, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def verified_here(kind: str) -> dict[str, Any]:
    """{version: {when, facts}} of `kind` versions a passing `relay fidelity` recorded here."""
    got = verified_all().get(kind)
    return got if isinstance(got, dict) else {}
