"""The facts about Codex that `relay fidelity` checks live (lab/fidelity runs the checks).

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
    FidelityFact(fact="codex rename seen (session index)", paths="discovery",
                 checks=(_D + "codex_rename_is_seen",)),
    FidelityFact(fact="codex daemon status (thread loaded, no TUI)", paths="discovery, codex-queue",
                 checks=(_D + "codex_thread_loaded_without_a_tui_is_live_with_no_pane",)),
    FidelityFact(fact="codex queue schema and read-back (idle)", paths="codex-queue",
                 checks=(_N + "codex_queue_to_an_idle_target",)),
    FidelityFact(fact="codex rollout queue turns (busy)", paths="codex-queue",
                 checks=(_N + "codex_queue_to_a_busy_target_waits_for_its_turn",)),
    FidelityFact(fact="tmux idle delivery with receiver evidence", paths="tmux",
                 checks=(_T + "idle_delivery_with_receiver_evidence",)),
    FidelityFact(fact="busy submit: codex Enter steers into the turn", paths="tmux",
                 checks=(_T + "busy_codex_enter_steers_into_the_running_turn",)),
    FidelityFact(fact="preflight refusals send zero keys (draft, copy-mode, slash menu)", paths="tmux",
                 checks=(_T + "refusal_sends_zero_keys",)),
    FidelityFact(fact="preflight refusal on a dialog sends zero keys", paths="tmux",
                 checks=(_T + "dialog_refusal_sends_zero_keys",)),
)

COMPOSER_END_KEY = "C-e"
"""The tmux key that moves the cursor to the end of Codex's composer (the lab clears a draft with it and C-u)."""


def tmux_unconfirmed(confirm: dict[str, Any], payload: str) -> str | None:
    """Why the tmux transport's confirm-stage data is not Codex's own evidence of a typed line that
    started a turn of its own (the rollout item: a user turn trigger, not steered), or None when it is."""
    item = confirm.get("item") or {}
    if item.get("turn_trigger") == "user" and not item.get("steered"):
        return None
    return f"rollout item is not a user-triggered, unsteered turn: {item}"
