"""A Claude Code target's part of a `relay send` plan, with the standard library alone.

The hook of issue 40's plain pre-plan (contract: frontends/send_plain.py; declared in the
entry-point group `relay_repl.plain_plan`): for one live row of Claude's plain listing, the
transport, fallback, payload, what counts as delivered, notes and files the models' plan would
show (`SocketTransport.plan` over `ClaudeSocketWire`), from the very functions they call
(plan_words.py, core/transport_words.py, the plain ranking). Anything it does not answer exactly
is None: the send then goes the models' way, unchanged. Only the messaging-socket transport is
planned here; a send that would go by tmux (no usable socket) is the models'.

Loaded by file (the agents package imports pydantic); its siblings are loaded the same way.
"""

from __future__ import annotations

import os
from typing import Any

SOCKET = "claude-code-socket"
MESSAGE = "claude-code-message"
TMUX = "tmux"


def _sibling(name: str) -> Any:
    from relay_repl.system.prefetch import load_by_file

    mod = load_by_file(f"claude-code-{name}", f"relay_repl.agents.claude_code.{name}", "relay_repl.plain_listing")
    if mod is None:
        raise ImportError(f"relay_repl.agents.claude_code.{name}")
    return mod


def plan_parts(row: Any, env: dict[str, str], send: Any) -> dict[str, Any] | None:
    """The transport's parts of the plan of `send` to `row`, or None (the models plan it)."""
    from relay_repl.core import transport_words

    words, records = _sibling("plan_words"), _sibling("records")
    refusals: dict[str, str | None] = {}
    for name in row.transports:
        if name == SOCKET:  # ClaudeSocketWire.refusal: the socket re-checked as ours
            ours, why = records.socket_is_ours(row.socket)
            refusals[name] = None if ours else why
        elif name == MESSAGE:  # a `relay send` never has its inbox listed as a Claude peer
            refusals[name] = "the operator inbox is not listed as a Claude peer"
        elif name == TMUX:  # Claude has a screen classifier; a pane is the base refusal (send.choose)
            refusals[name] = None
        else:
            return None
    choice = send.choose(row, refusals)
    if choice is None or choice[0] != SOCKET:
        return None
    transport, fallback, choice_notes = choice
    detail = row.detail or {}
    if not row.socket or send.interrupt:
        return None
    reply = None
    if send.inbox_open:  # SocketTransport._reply_path: this process's `<pid>.sock` in the target's socket dir
        reply = words.own_listener(os.path.dirname(row.socket), send.pid)
        if os.path.lexists(reply):
            return None  # the models pick a fresh name: not this plan's to guess
    token = bool(words.peer_token_at(words.config_dir(detail.get("record")), row.socket))
    notes = words.state_notes(row.state, detail.get("waiting_for"), interrupt=False)
    if not send.inbox_open:
        notes += (transport_words.NO_INBOX,)
    notes += (words.frame_note(row.socket, token, reply, interrupt=False),)
    return {
        "transport": transport,
        "fallback": fallback,
        "choice_notes": choice_notes,
        "payload": send.line,
        "delivered_when": words.delivered_when(row.spec, send.pid),
        "now": None,  # the socket transports look at nothing before asking
        "notes": notes,
        "files": (transport_words.listener_file(reply),) if reply else (),
    }


def reply_route_soon(env: dict[str, str]) -> None:
    """What the models' reply route asks first, started now (frontends/run_plain.py calls it when a bare
    run's steps wait for an answer from a Claude session, before it reads anything else).

    That route lists the operator's inbox as a Claude peer, for the verified client only
    (`ClaudeKind.inbox_listing` → agents/versions.require_verified → `claude --version`): the version
    process is started here, to run beside phase 1's reads (`inbox_listing_plan` reads its answer) or the
    models' imports, and binary_version takes it only when it asks the very same question (the file, and
    the environment: no `version_env` for Claude)."""
    from relay_repl.system.prefetch import start_version, version_env

    exe = _sibling("listing").which("claude", env.get("PATH"))  # shutil.which, as client_version finds it
    if exe is not None:
        start_version(exe, version_env(env, {}))


LISTED_AS = "relay-operator"
"""The name the inbox is listed under (Answers.register_inbox's default, which the runner uses)."""


def inbox_listing_plan(env: dict[str, str]) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """A Claude run's first plan, plainly: (the kind's label, the plan's fields as `ClaudePeerRegistration.plan`
    gives them, the values drawn for it: peer_record.PINS), or None (the models list the inbox, and say why not).

    frontends/run_plain.py calls it for a bare run whose steps wait for a Claude session's answer: the runner
    then lists the operator's inbox first (`ClaudeKind.inbox_listing`). The same record, from the same home
    (peer_record.py), for the same version: the `--version` process `reply_route_soon` started (the one
    `require_verified` then takes), read as it reads it, under the same policy (plain_facts.version_status).
    Anything not answered exactly (no such process, a version not pinned nor verified here, the adapter not
    read plainly, no live session with a socket) is None, before anything is printed."""
    from pathlib import Path

    from relay_repl.system.prefetch import load_by_file, peek_version, version_env

    facts: Any = load_by_file("plain-facts", "relay_repl.agents.plain_facts", "relay_repl.plain_listing")
    listing = _sibling("listing")
    kind = _sibling("plain_listing").KIND
    adapter = facts.adapter(kind) if facts is not None else None
    if adapter is None:
        return None
    exe = listing.which("claude", env.get("PATH"))  # as client_version finds it (shutil.which)
    early = peek_version(exe, version_env(env, {})) if exe is not None else None
    if early is None:
        return None
    try:
        version = facts.early_version(early, 20.0)  # binary_version's timeout
    except TimeoutError:
        return None
    if facts.version_status(kind, version, adapter["verified_versions"]) not in ("pinned", "verified"):
        return None  # require_verified refuses it, in its words
    record = _sibling("peer_record")
    cfg = Path(facts.registry_base(adapter["registry"], env))  # claude_config_dir: the adapter's registry base
    d = record.draft(name=LISTED_AS, claude_version=version, cfg=cfg)
    if d is None:
        return None
    return _sibling("plan_words").LABEL, record.plan_parts(d), d.pins
