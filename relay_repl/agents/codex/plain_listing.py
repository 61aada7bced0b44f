"""Codex threads as `relay targets` lists them, with the standard library alone.

What `provider.CodexProvider.discover` gives, through the very steps it runs (threads.py): the
threads of one CODEX_HOME, their lock holders, the daemon's status (daemon_sync.py, the
standard-library client), their panes (one capture of the candidate panes) and the holder's
version (the daemon's own word for the threads it holds, else its binary's `--version`). Where a step needs what this path does not load (a rollout to find by walking
sessions/, `fuser` for a lock /proc/locks cannot show) or a value the models would coerce or
refuse, it returns None and the caller lists through the models, whose errors stay theirs.
tests/frontends/test_targets_plain.py holds the two equal. Loaded by file
(frontends/targets_plain.py; entry-point group `relay_repl.plain_listing`), its
siblings the same way: importing them by name would first run the agents package (pydantic).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KIND = "codex"
GROUP = "relay_repl.plain_listing"
DAEMON_TIMEOUT = 3.0  # CodexProvider's daemon_timeout
RECENT_UNLOADED = 50  # CodexProvider's recent_unloaded

_S = (str, type(None))
DETAIL: tuple[tuple[str, Any, tuple[type, ...]], ...] = (
    ("tmux_session", None, _S), ("pane_current_command", None, _S), ("pane_note", None, _S), ("thread_id", None, _S),
    ("codex_home", None, _S), ("sqlite_home", None, _S), ("lock", None, _S), ("cwd", None, _S), ("title", None, _S),
    ("source", None, _S), ("thread_source", None, _S), ("cli_version", None, _S), ("archived", None, (bool, type(None))),
    ("goal_status", None, _S), ("goal_objective", None, _S), ("queue_note", None, _S),
    ("holder_pid", None, (int, type(None))), ("holder_kind", None, _S), ("holder_version", None, _S),
    ("status_raw", None, (dict, type(None))), ("daemon_note", None, _S), ("state_source", None, _S),
    ("collaboration_mode", None, _S), ("plan_mode", False, (bool,)))
"""CodexDetail's fields, defaults and the types it takes as they are, in its order (a test holds them equal)."""


class _Models(Exception):
    """What this path does not read exactly: the models list it."""


def _load(name: str) -> Any:
    from relay_repl.system.prefetch import load_by_file

    module = "relay_repl.agents.plain_facts" if name == "plain_facts" else f"relay_repl.agents.codex.{name}"
    # plain_facts under the name every plain path loads it by (one copy: relay send reads the adapter through it too)
    mod = load_by_file("plain-facts" if name == "plain_facts" else f"codex-{name}", module, GROUP)
    if mod is None:
        raise _Models(module)
    return mod


def _version_of(threads: Any) -> Any:
    """versions.binary_version(exe, kind=codex): `<exe> --version` (home pointed nowhere), x.y.z or None; cached."""
    facts = _load("plain_facts")
    cache: dict[tuple[str, float], str | None] = {}

    def version_of(exe: str) -> str | None:
        from relay_repl.system.prefetch import Listing

        try:
            mtime = os.stat(exe).st_mtime
        except OSError:
            return None
        key = (os.path.realpath(exe), mtime)
        if key not in cache:
            env = dict(os.environ)
            env.setdefault("DISABLE_AUTOUPDATER", "1")
            env.update(threads.VERSION_ENV)
            try:
                code, out, _ = Listing([exe, "--version"], env).result(20.0)
            except (OSError, TimeoutError):
                return None  # not cached, as binary_version does not cache it
            try:
                cache[key] = facts.parse_version(out.decode()) if code == 0 else None
            except UnicodeDecodeError:
                raise _Models("--version printed what is not UTF-8") from None
        return cache[key]

    return version_of


def listing(env: Mapping[str, str], roster: Any) -> list[Any] | None:
    """The rows CodexProvider(env=env).discover() lists, or None (list through the models)."""
    try:
        return _listing(env, roster)
    except _Models:
        return None


def _listing(env: Mapping[str, str], roster: Any) -> list[Any]:
    from relay_repl.core.target_row import TargetRow
    from relay_repl.system.proc import read_proc_locks

    facts = _load("plain_facts")
    adapter = facts.adapter(KIND)
    if adapter is None:
        raise _Models("adapter")
    home = Path(facts.registry_base(adapter["registry"], env))
    if not home.is_dir():
        return []
    steps, config_file, sq = _load("threads"), _load("config_file"), _load("sqlite_home")
    paths = adapter["registry"].get("paths", {})
    prefix = adapter["prefix"]
    notes: list[str] = []

    def sqlite_home(h: Path, e: Mapping[str, str]) -> Any:
        return sq.sqlite_home(h, e, config=config_file.codex_config)

    def scan(sessions: Path, wanted: set[str]) -> dict[str, Path]:
        if wanted:
            raise _Models("a rollout to find by walking sessions/")  # rollout.scan_rollouts: the models' path
        return {}

    threads, locks, dbs, goals = steps.gather(home, paths, env, RECENT_UNLOADED, notes, sqlite_home, scan)
    held, fallback = steps.holders(locks, read_proc_locks())
    if fallback:
        raise _Models("fuser")
    daemon = steps.read_daemon_pid(home / paths["daemon_pid"])
    kinds = {tid: steps.holder_kind(pid, daemon) for tid, pid in held.items()}

    sock = home / paths["control_socket"]
    loaded, reads, daemon_says, daemon_err = steps.daemon_status(
        sock, kinds, lambda ids: _load("daemon_sync").daemon_status_sync(sock, ids, DAEMON_TIMEOUT))

    pane_of: dict[str, Any] = {}
    pane_why: dict[str, str] = {}
    pane_notes: dict[str, str] = {}
    if held:
        panes = roster.panes()
        if panes:
            table = roster.processes()
            cands = steps.codex_panes(panes, table)
            footer = [re.compile(p, re.M) for p in adapter["screen"].get("marks", {}).get("footer", [])]
            shots = roster.capture([pc.pane for pc in cands.values()]) if footer and cands else {}
            pane_of, pane_why, pane_notes = steps.assign_panes(threads, held, kinds, reads, panes, table, cands, shots,
                                                               footer)

    def status_word(version: str | None) -> str:
        return facts.version_status(KIND, version, adapter["verified_versions"])

    rows = []
    for fields, detail in steps.target_fields(home, dbs, threads, reads, loaded, daemon_err, held, kinds, goals, pane_of,
                                              pane_why, pane_notes, adapter.get("status", {}), prefix,
                                              _version_of(steps), status_word, daemon_says):
        if type(fields["name"]) is not str or type(fields.get("client_version")) not in _S:
            raise _Models("a name or version the model would coerce or refuse")
        if set(detail) - {k for k, _, _ in DETAIL} or any(type(detail.get(k, d)) not in ok for k, d, ok in DETAIL):
            raise _Models("a detail the model would coerce or refuse")
        rows.append(TargetRow(kind=KIND, prefix=prefix, **fields, detail={k: detail.get(k, d) for k, d, _ in DETAIL}))
    return rows
