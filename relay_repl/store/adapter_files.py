"""Where the adapter files are, and one adapter's `[registry]` read plainly (standard library only).

Why apart from agents/adapter.py: a kind's cheap rules (agents/<kind>/outside.py, loaded by file
before the agents package) need one fact of the adapter, where the kind keeps its registry
(`$<env>` or `<default>`, plus a relative path), and agents/adapter.py validates the whole file
with pydantic, most of a `relay serve --stdio` start (issue 33). The search order and the one
```` ```toml ```` block are this module's, and agents/adapter.py uses them, so the two readers
find the same file and the same block. `registry_path` reads no more than it must and answers
None for anything not plainly the shape `RegistrySpec` accepts: a cheap rule then cannot exclude,
and the model's reader decides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from relay_repl.store.paths import data_dir

TOML_BLOCK = re.compile(r"^```toml[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def adapter_dirs() -> list[Path]:
    """Candidate directories of `adapters/<kind>.md`, in search order: `$RELAY_ADAPTERS_DIR` if set
    (tests, experiments), then the data package `relay_repl.adapters_data` as the import system
    resolves it (store/paths.py `data_dir`)."""
    dirs: list[Path] = []
    env = os.environ.get("RELAY_ADAPTERS_DIR")
    if env:
        dirs.append(Path(env))
    dirs.append(data_dir("relay_repl.adapters_data"))
    return dirs


_parsed: dict[tuple[str, int, int], dict] = {}
"""Each adapter block parsed once per (file, mtime, size): the inbox asks the kinds' rules on every
reply (agents/origin.py), and parsing the TOML was most of a rule's CPU (issue 33)."""


def registry_path(kind: str, key: str, environ: Mapping[str, str]) -> str | None:
    """`<registry base>/<paths[key]>` of kind `kind`'s adapter for `environ` (HOME honoured for `~`),
    as `RegistrySpec.base(environ) / paths[key]` gives it; None when the file, its block or its
    `[registry]` is not plainly there (the caller then knows nothing from it)."""
    try:
        path = next((p for d in adapter_dirs() if (p := d / f"{kind}.md").is_file()), None)
        if path is None:
            return None
        st = path.stat()
        stamp = (str(path), st.st_mtime_ns, st.st_size)
        data = _parsed.get(stamp)
        if data is None:
            blocks = TOML_BLOCK.findall(path.read_text(encoding="utf-8"))
            if len(blocks) != 1:
                return None
            import tomllib

            data = _parsed[stamp] = tomllib.loads(blocks[0])
    except (OSError, ValueError, ModuleNotFoundError):  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        return None
    reg = data.get("registry")
    if data.get("kind") != kind or not isinstance(reg, dict):
        return None
    env, default, paths = reg.get("env"), reg.get("default"), reg.get("paths")
    rel = paths.get(key) if isinstance(paths, dict) else None
    if not (isinstance(env, str) and isinstance(default, str) and isinstance(rel, str)):
        return None
    raw = environ.get(env) or default
    if raw.startswith("~"):
        raw = (environ.get("HOME") or str(Path.home())) + raw[1:]
    return str(Path(raw) / rel)
