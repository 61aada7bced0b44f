"""Where Codex keeps its SQLite databases: `sqlite_home`, else `$CODEX_SQLITE_HOME`, else CODEX_HOME.

Why: Codex 0.171.0 already honours both (reported in the field for newer versions first). Measured
with `codex doctor` (its `state` rows), CODEX_HOME holding config.toml:
- `sqlite_home = "<dir>"` in `$CODEX_HOME/config.toml` moves state_5, goals_1, queue_1, logs_2 and
  the rest there, and wins over `CODEX_SQLITE_HOME`; a relative value is relative to CODEX_HOME,
  `~` is expanded, an empty one is ignored;
- `CODEX_SQLITE_HOME=<dir>` moves them when config.toml names none (relative: to the process's cwd);
- neither: CODEX_HOME.
A relay reading `$CODEX_HOME/queue_1.sqlite` while Codex writes the moved one meets a missing file
(names and goals lost) or, worse, a stale copy left behind: the read-back of our item finds no row
and says "dequeued" for an item still waiting: a silent wrong verdict.

config.toml is the client's file, read through the one loader (store/loader.py): when it cannot be
read, relay says so (a `relay doctor` finding and a discovery note) and uses the next rule.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

ENV = "CODEX_SQLITE_HOME"
KEY = "sqlite_home"


class SqliteHome(NamedTuple):
    path: Path
    source: str
    """How it was chosen, in words (`sqlite_home in .../config.toml`, `$CODEX_SQLITE_HOME`, `CODEX_HOME`)."""
    problem: str | None = None
    """Why config.toml could not be used, when it could not (one line)."""


def sqlite_home(codex_home: Path, env: Mapping[str, str], cwd: Path | None = None, config: Any = None) -> SqliteHome:
    """The directory of Codex's SQLite databases for `codex_home`, as Codex resolves it. `config`:
    config_file.codex_config as a caller loaded it (`relay targets`' plain path loads it by file)."""
    if config is None:
        from relay_repl.agents.codex.config_file import codex_config as config
    from relay_repl.core import file_shape
    from relay_repl.core.errors import FileProblem

    cfg = codex_home / "config.toml"
    problem = None
    value: Any = None
    fix = "Codex cannot read it either: fix it (relay looks for sqlite_home there)"
    try:
        value = (config(codex_home, fix) or {}).get(KEY)
    except FileProblem as exc:
        problem = str(exc)
    if value is not None and not isinstance(value, str):
        problem = f"{cfg}: {KEY} must be text (a directory), not {file_shape.kind_of(value)}: fix it"
    elif isinstance(value, str) and value.strip():
        p = Path(os.path.expanduser(value))
        return SqliteHome(p if p.is_absolute() else codex_home / p, f"{KEY} in {cfg}", problem)
    raw = env.get(ENV, "")
    if raw.strip():
        p = Path(os.path.expanduser(raw))
        return SqliteHome(p if p.is_absolute() else (cwd or Path.cwd()) / p, f"${ENV}", problem)
    return SqliteHome(codex_home, "CODEX_HOME", problem)
