"""Gemini CLI sessions as `relay targets` lists them, with the standard library alone.

What `provider.GeminiProvider.discover` gives, through the very steps it runs (sessions.py): the
Gemini processes of our uid and home, their panes (one capture of those panes), their chat files
(the footer's session id, else by start time), their names, and each state read from its screen by
the kind's one classifier (screen.py over the plain screen values, agents/screens/). Where a value
would not go through the models as it is (a string that is not UTF-8, an adapter the models must
read), it returns None and the caller lists through the models. tests/frontends/test_targets_plain.py
holds the two equal. Loaded by file (frontends/targets_plain.py; entry-point group
`relay_repl.plain_listing`), its siblings through `prefetch.sibling` the same way: importing them by
name would first run the agents package (pydantic).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KIND = "gemini-cli"

DETAIL: tuple[tuple[str, Any], ...] = (
    ("tmux_session", None), ("pane_current_command", None), ("pane_note", None), ("cwd", None), ("project", None),
    ("gemini_dir", None), ("session_id", None), ("worker_pid", None), ("tied_by", None), ("notes", ()))
"""GeminiDetail's fields and defaults, in its order: its JSON (a test holds the two equal)."""


def _utf8(v: Any) -> bool:
    """Whether the models take this value as it is (a str that encodes: a path read from /proc may not)."""
    if isinstance(v, str):
        try:
            v.encode()
        except UnicodeEncodeError:
            return False
    elif isinstance(v, (tuple, list)):
        return all(_utf8(x) for x in v)
    return True


def plain_facts() -> Any:
    """agents/plain_facts.py, loaded by file under the name every plain path loads it by (one copy: `relay
    send`'s plain pre-plan reads the adapter through it too, frontends/send_plain.py)."""
    from relay_repl.system.prefetch import load_by_file

    mod = load_by_file("plain-facts", "relay_repl.agents.plain_facts", "relay_repl.plain_listing")
    if mod is None:
        raise ImportError("relay_repl.agents.plain_facts (by file)")
    return mod


def listing(env: Mapping[str, str], roster: Any) -> list[Any] | None:
    """The rows GeminiProvider(env=env).discover() lists, or None (list through the models)."""
    from relay_repl.core.target_row import TargetRow
    from relay_repl.system.prefetch import sibling

    steps = sibling(__name__, "relay_repl.agents.gemini_cli.sessions")
    table = roster.processes()
    found = steps.find_sessions(table, env)
    if not found:
        return []
    facts = plain_facts()
    adapter = facts.adapter(KIND)
    if adapter is None:
        return None  # an adapter the models read (RELAY_ADAPTERS_DIR, other types): their version words

    def status_word(version: str | None) -> str:
        return facts.version_status(KIND, version, adapter["verified_versions"])

    footers = steps.read_screens(found, roster.capture(steps.place_panes(found, roster.panes(), table)))
    steps.tie_chats(found, footers)
    rows = []
    for fields, detail in steps.target_fields(found, status_word):
        if not all(_utf8(v) for v in (*fields.values(), *detail.values())):
            return None
        rows.append(TargetRow(**fields, detail={k: detail.get(k, d) for k, d in DETAIL}))
    return rows
