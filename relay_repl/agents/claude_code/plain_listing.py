"""Claude Code sessions as `relay targets` lists them, with the standard library alone.

What `provider.ClaudeProvider.discover` gives, for the registry it accepts exactly: every
`sessions/<pid>.json` a record `SessionRecord` takes as it is (each field of the type it declares,
no coercion), and Claude's listing rule (listing_rule.py) deciding every record, so that
`claude agents --json` is not run (claude-code.md §1.6: live when /proc/<pid>/stat field 22
equals procStart). Anything else (a record the model would coerce or refuse, an undecided rule, a
record the rule lists that relay could not read) returns None: the caller lists through the models,
whose errors and edge cases stay theirs. tests/frontends/test_targets_plain.py holds the two equal.

Loaded by file (frontends/targets_plain.py), declared in the entry-point group
`relay_repl.plain_listing`: importing it by name would first run the agents package (pydantic).
Its siblings are loaded the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KIND = "claude-code"
HOW = "claude agents --json's rule over sessions/ (in-process)"

DETAIL: tuple[tuple[str, Any], ...] = (
    ("tmux_session", None), ("pane_current_command", None), ("pane_note", None), ("session_id", None), ("cwd", None),
    ("record", None), ("transcript_exists", False), ("name_source", None), ("status_raw", None), ("waiting_for", None),
    ("record_kind", None), ("entrypoint", None), ("record_tmux", None), ("socket_note", None), ("unreadable", False))
"""ClaudeDetail's fields and defaults, in its order: its JSON (a test holds the two equal)."""

RECORD_STRINGS = ("sessionId", "cwd", "version", "kind", "entrypoint", "messagingSocketPath", "name", "nameSource",
                  "status", "waitingFor", "tmux")
"""SessionRecord's `str | None` fields (a test holds them equal to the model's)."""


def _sibling(name: str) -> Any:
    from relay_repl.system.prefetch import load_by_file

    mod = load_by_file(f"claude-code-{name}", f"relay_repl.agents.claude_code.{name}", "relay_repl.plain_listing")
    if mod is None:
        raise ImportError(f"relay_repl.agents.claude_code.{name}")
    return mod


def _exact_record(d: Any) -> bool:
    """Whether SessionRecord takes `d` as it is: a dict, `pid` an int, `procStart` a str or int, the
    other declared fields strings or null (absent or extra fields as the model keeps them)."""
    if not isinstance(d, dict) or type(d.get("pid")) is not int:
        return False
    ps = d.get("procStart")
    if ps is not None and type(ps) not in (str, int):
        return False
    return all(d.get(k) is None or type(d[k]) is str for k in RECORD_STRINGS)


def _detail(**given: Any) -> dict[str, Any]:
    return {k: given.get(k, default) for k, default in DETAIL}


def listing(env: Mapping[str, str], panes: Any) -> list[Any] | None:
    """The rows ClaudeProvider(env=env).discover() lists, or None (list through the models)."""
    from relay_repl.core.errors import FileProblem
    from relay_repl.core.target_row import TargetRow
    from relay_repl.store.loader import read_bytes
    from relay_repl.system.proc import same_process

    facts = _sibling_facts()
    adapter = facts.adapter(KIND)
    if adapter is None:
        return None
    records_mod, rule_mod = _sibling("records"), _sibling("listing_rule")
    prefix = adapter["prefix"]
    status_map = adapter.get("status", {})

    def status_word(version: str | None) -> str:
        return facts.version_status(KIND, version, adapter["verified_versions"])

    cfg = facts.registry_base(adapter["registry"], env)
    if not os.path.isdir(cfg):
        return []
    sessions = os.path.join(cfg, "sessions")
    records: dict[int, dict[str, Any]] = {}
    broken: dict[str, str] = {}
    files: list[tuple[str, bytes | None, str | None]] = []
    names: list[str] = []
    try:
        names = os.listdir(sessions)
    except FileNotFoundError:
        pass
    except OSError as exc:
        broken[sessions] = f"cannot list {sessions} ({exc.strerror})"
    for fname in names:
        stem, _, ext = fname.partition(".")
        if ext == "json" and stem.startswith("pid-") and stem[4:].isdigit():
            broken[stem] = records_mod.legacy_reason(fname)
            continue
        if ext != "json" or not stem.isdigit():
            continue
        path = os.path.join(sessions, fname)
        sink = files if rule_mod.RECORD_NAME.fullmatch(fname) else None
        try:
            raw = read_bytes(Path(path), "remove it", missing_ok=True, max_bytes=records_mod.RECORD_MAX_BYTES)
            if raw is None:
                continue
            if sink is not None:
                sink.append((fname, *rule_mod.claude_view(path, raw)))
            rec = json.loads(raw)
        except FileProblem as exc:
            if sink is not None:
                sink.append((fname, None, f"unreadable (it {exc.problem})"))
            broken[stem] = records_mod.unreadable_reason(fname, f"it {exc.problem}")
            continue
        except OSError as exc:
            broken[stem] = records_mod.unreadable_reason(fname, str(exc.strerror or exc))
            continue
        except (ValueError, RecursionError) as exc:
            broken[stem] = records_mod.invalid_reason(fname, str(exc).splitlines()[0][:80])
            continue
        if not _exact_record(rec):
            return None  # the model coerces or refuses it: its words, not ours
        if str(rec["pid"]) != stem:
            broken[stem] = f"sessions/{fname} names pid {rec['pid']}: a record must be named for its pid; ignoring it"
            continue
        records[rec["pid"]] = rec

    rule = rule_mod.apply_rule(files, verified=lambda version: status_word(version) in ("pinned", "verified"))
    if rule.undecided or rule.pids - set(records):
        return None  # `claude agents --json` decides, or a listed record is read again on demand: the models do it
    skipped = {int(f[:-5]): f"Claude skips sessions/{f}: {why}" for f, why in rule.skipped.items()
               if f[:-5].isdigit() and str(int(f[:-5])) == f[:-5]}
    left_out = {**skipped, **rule.left_out}
    listed = rule.pids

    by_pane_pid = panes.by_pane_pid()
    rows: list[Any] = []
    for pid in sorted(records):
        rec = records[pid]
        proc_start = rec.get("procStart")
        live, why = same_process(pid, proc_start)
        tp = records_mod.transcript_path(cfg, rec.get("cwd"), rec.get("sessionId"))
        detail = {"session_id": rec.get("sessionId"), "cwd": rec.get("cwd"), "transcript_exists": bool(tp and tp.is_file()),
                  "name_source": rec.get("nameSource"), "status_raw": rec.get("status"), "waiting_for": rec.get("waitingFor"),
                  "record_kind": rec.get("kind"), "entrypoint": rec.get("entrypoint"), "record_tmux": rec.get("tmux"),
                  "record": os.path.join(sessions, f"{pid}.json")}
        sock = rec.get("messagingSocketPath")
        common: dict[str, Any] = {"socket": sock, "evidence_file": str(tp) if tp else None,
                                  "proc_start": None if proc_start is None else str(proc_start)}
        name = rec.get("name") or str(pid)
        rel = f"sessions/{pid}.json"
        version = rec.get("version")
        if live and pid not in listed:
            live, why = False, (f"{why}, but `claude agents --json` would not list it: "
                                f"{left_out.get(pid, 'its rule leaves this file out')}")
        if not live:
            rows.append(TargetRow(kind=KIND, prefix=prefix, name=name, address=sock or "", pid=pid, live=False,
                                  state="unknown", pane=None, transports=(), stale_reason=why, **common,
                                  identified_by=f"{rel}: stale, {why}", detail=_detail(**detail),
                                  client_version=version, client_status=status_word(version)))
            continue
        transports, pane = records_mod.ways_and_pane(sock, pid, by_pane_pid, detail, common)
        rows.append(TargetRow(
            kind=KIND, prefix=prefix, name=name, address=sock or "", pid=pid, live=True,
            state=status_map.get(rec.get("status") or "", "unknown"), pane=pane.pane_id if pane else None,
            transports=tuple(transports),
            identified_by=f"{HOW} + {rel} ({why})" + (f"; pane {pane.pane_id} has pane_pid {pid}" if pane else ""),
            detail=_detail(**detail), client_version=version, **common, client_status=status_word(version)))
    for stem, why in sorted(broken.items()):
        rows.append(TargetRow(kind=KIND, prefix=prefix, name=stem, address="", pid=int(stem) if stem.isdigit() else None,
                              live=False, state="unknown", identified_by=f"unreadable registry record: {why}",
                              stale_reason=why, detail=_detail(unreadable=True)))
    return rows


def _sibling_facts() -> Any:
    from relay_repl.system.prefetch import load_by_file

    mod = load_by_file("plain-facts", "relay_repl.agents.plain_facts", "relay_repl.plain_listing")
    if mod is None:
        raise ImportError("relay_repl.agents.plain_facts")
    return mod
