"""The start Claude's and Codex's turn watches share (agents/turn_watch.py `MatchedTail`, issue 35):
matched by the client's id when there is one, else by the exact text, and never by neither."""

from __future__ import annotations

import pytest

from relay_repl.agents.claude_code.transcript import ClaudeTurnWatch
from relay_repl.agents.codex.rollout import CodexTurnWatch


def test_the_anchor_names_the_id_when_there_is_one_else_the_exact_text(tmp_path):
    f = tmp_path / "t.jsonl"
    assert ClaudeTurnWatch(f, msg_id="m-1", text="x").anchor == "msg_id m-1"
    assert ClaudeTurnWatch(f, text="x").anchor == "the exact typed text"
    assert CodexTurnWatch(f, client_id="c-1").anchor == "client_id c-1"
    assert CodexTurnWatch(f, text="x").anchor == "the exact payload text"
    w = CodexTurnWatch(str(f), text="x")
    assert w.source == f and w.text == "x" and w.client_id is None and w.poll() is None  # no file yet: nothing


def test_a_watch_with_neither_id_nor_text_is_refused():
    with pytest.raises(ValueError, match="a Claude turn is matched by msg_id or by the exact text"):
        ClaudeTurnWatch("t.jsonl")
    with pytest.raises(ValueError, match="a Codex turn is matched by client_id or by the exact text"):
        CodexTurnWatch("t.jsonl", client_id="", text="")
