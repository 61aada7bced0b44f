"""The facts about Claude Code that `relay fidelity` checks live (lab/fidelity runs the checks).

Their home is the kind's package: a fact about the client changes with the client, and the
lab iterates every kind's table rather than naming the kinds. Facts shared with another kind
carry the same text there, and are reported once for both.
"""

from __future__ import annotations

from typing import Any

from relay_repl.agents.kind import FidelityFact

_D, _N, _T = "discovery:", "native:", "tmux:"

FACTS: tuple[FidelityFact, ...] = (
    FidelityFact(fact="registry fields, listing, panes (both kinds)", paths="discovery",
                 checks=(_D + "both_kinds_listed_idle_with_their_panes_and_transports",)),
    FidelityFact(fact="liveness: busy while a turn runs", paths="discovery, plans",
                 checks=(_D + "busy_while_a_slow_turn_runs",)),
    FidelityFact(fact="claude socket wire + transcript origin records (idle)",
                 paths="claude-code-socket, claude-code-message", checks=(_N + "claude_socket_to_an_idle_target",)),
    FidelityFact(fact="claude socket wire + origin records (busy, both paths)",
                 paths="claude-code-socket, claude-code-message",
                 checks=(_N + "claude_socket_transports_to_a_busy_target",)),
    FidelityFact(fact="claude message wrapper recorded", paths="claude-code-message",
                 checks=(_N + "message_plan_shows_the_wrapper_that_is_written_and_recorded",)),
    FidelityFact(fact="tmux idle delivery with receiver evidence", paths="tmux",
                 checks=(_T + "idle_delivery_with_receiver_evidence",)),
    FidelityFact(fact="busy submit: claude Enter queues for the tool boundary", paths="tmux",
                 checks=(_T + "busy_claude_enter_queues_then_delivers",)),
    FidelityFact(fact="preflight refusals send zero keys (draft, copy-mode, slash menu)", paths="tmux",
                 checks=(_T + "refusal_sends_zero_keys",)),
    FidelityFact(fact="preflight refusal on a dialog sends zero keys", paths="tmux",
                 checks=(_T + "dialog_refusal_sends_zero_keys",)),
)

COMPOSER_END_KEY = "End"
"""The tmux key that moves the cursor to the end of Claude's composer (the lab clears a draft with it and C-u)."""


def tmux_unconfirmed(confirm: dict[str, Any], payload: str) -> str | None:
    """Why the tmux transport's confirm-stage data is not Claude's own evidence of `payload` typed
    by a human (its transcript record, origin human, holding the text), or None when it is."""
    record = confirm.get("record") or {}
    if (record.get("origin") or {}).get("kind") == "human" and payload in str(record.get("content", "")):
        return None
    return f"transcript record is not the typed line with a human origin: {record}"
