"""Where the operator's hosts are kept, without `hosts.py`'s models: `relay targets`' plain path
asks only whether the file exists (no file: no hosts, as `load_hosts` says)."""

from __future__ import annotations

import os
from pathlib import Path

import relay_repl.store.paths as paths


def lab_dir() -> Path | None:
    """The lab this process is pointed at (`relay --lab`, `relay lab env`), or None."""
    d = os.environ.get("RELAY_LAB_DIR")
    return Path(d) if d else None


def hosts_file() -> Path:
    lab = lab_dir()
    return lab / "hosts.toml" if lab else paths.state_dir(create=False) / "hosts.toml"
