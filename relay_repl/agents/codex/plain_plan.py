"""A Codex thread's part of a `relay send` plan, with the standard library alone.

The hook of issue 40's plain pre-plan (contract: frontends/send_plain.py; declared in the
entry-point group `relay_repl.plain_plan`): for one live row of Codex's plain listing, the
transport, fallback, payload, what counts as delivered, notes and files the models' plan would
show (`DurableQueueTransport.plan` over `CodexQueue`), from the very functions they call
(plan_words.py, the plain ranking). Only the durable queue is planned here: a send that would go by
tmux (a thread with no rollout yet, typed into its pane after a preflight look at the screen) is
the models'. Anything not answered exactly is None, and the send goes the models' way, unchanged.

Everything the row says came from the same steps discovery runs (threads.py): the daemon's status
("status idle from daemon"), the goal from goals_1.sqlite (a thread whose goal is active never goes
idle: the ranking's note and the queue's goal-controller note), Plan mode from the rollout, the
lock holder. Loaded by file (the agents package imports pydantic); its sibling the same way.
"""

from __future__ import annotations

from typing import Any

QUEUE = "codex-queue"
TMUX = "tmux"


def _words() -> Any:
    from relay_repl.system.prefetch import load_by_file

    mod = load_by_file("codex-plan_words", "relay_repl.agents.codex.plan_words", "relay_repl.plain_listing")
    if mod is None:
        raise ImportError("relay_repl.agents.codex.plan_words")
    return mod


def plan_parts(row: Any, env: dict[str, str], send: Any) -> dict[str, Any] | None:
    """The transport's parts of the plan of `send` to `row`, or None (the models plan it)."""
    words = _words()
    if row.kind != "codex" or not isinstance(row.detail, dict):
        return None
    refusals: dict[str, str | None] = {}
    for name in row.transports:
        if name == QUEUE:  # DurableQueueTransport.refusal: the kind's (the version policy is send.choose's)
            refusals[name] = words.row_queue_refusal(row)
        elif name == TMUX:  # Codex has a screen classifier; liveness and a pane are the base refusal (send.choose)
            refusals[name] = None
        else:
            return None
    choice = send.choose(row, refusals)
    if choice is None or choice[0] != QUEUE:
        return None
    transport, fallback, choice_notes = choice
    return {
        "transport": transport,
        "fallback": fallback,
        "choice_notes": choice_notes,
        "payload": send.line,  # the queue sends the envelope line as it is (Transport.payload)
        "delivered_when": words.queue_delivered_when(row.address),
        "now": None,  # the queue looks at nothing before asking
        "notes": words.row_queue_notes(row),
        "files": (),  # `thread/queue/add` (or `codex queue`) writes Codex's own queue row, no file of relay's
    }


def reply_route(row: Any, env: dict[str, str], relay_id: str, inbox: str | None) -> str | None:
    """The plan's reply route for a send to `row` that asks for an answer (`relay run ping`'s first step), as
    `CodexReplies.route` names it (same rules: core/reply_words.configured over plan_words.reply_options, from
    the thread's config.toml read by the same parser), or None when it is not an open route (the models plan it)."""
    from relay_repl.core import reply_words
    from relay_repl.core.errors import FileProblem
    from relay_repl.system.prefetch import load_by_file

    words = _words()
    if row.kind != "codex" or not isinstance(row.detail, dict):
        return None
    config = load_by_file("codex-config_file", "relay_repl.agents.codex.config_file", "relay_repl.plain_listing")
    if config is None:
        return None
    from pathlib import Path

    home = Path(words.home_dir(row.detail.get("codex_home"), env))
    try:
        cfg = config.codex_config(home, words.CONFIG_FIX)
    except FileProblem:
        cfg = None
    rollout = row.evidence_file
    opts = words.reply_options(cfg or {}, str(home / "config.toml"), str(rollout) if rollout else None, row.address)
    verified_by = words.reply_verified_by(row.address, row.pid)
    route = reply_words.configured(row.spec, relay_id, inbox, None, opts,
                                   lambda: reply_words.relay_reply(row.spec, relay_id, inbox, verified_by),
                                   mcp_refused=words.mcp_refused(opts), mcp_first=words.MCP_FIRST)
    return route["how"] if route["ok"] and not route.get("needs_native_reply") else None
