"""Turn replies read from real records: a Claude 2.1.328 transcript and a Codex 0.169.0 rollout,
both recorded in the lab (paths rewritten to /lab; Claude's api-request blobs dropped for size)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay_repl.agents.claude_code.transcript import ClaudeTurnWatch
from relay_repl.agents.codex.rollout import CodexTurnWatch

FIX = Path(__file__).parent / "fixtures"
CLAUDE = FIX / "claude-2.1.328-transcript.jsonl"
CODEX = FIX / "codex-0.169.0-rollout.jsonl"


def grow(dst: Path, src: Path, upto: int) -> None:
    """The first `upto` lines of src, as a file still being written would show them."""
    dst.write_text("".join(src.read_text().splitlines(keepends=True)[:upto]))


# -- Codex -----------------------------------------------------------------------------


def test_codex_turn_reply_is_the_final_message_after_an_mcp_tool_call():
    r = CodexTurnWatch(CODEX, client_id="01a22eb0-5d27-7f11-b599-7fa020692369").poll()
    assert r is not None and r.status == "answered" and r.text == "final: beta is done"
    assert r.turn_id == "01a22eb0-5d2e-77d1-8af0-49cffdafad56"
    assert "task_complete" in r.record and "trigger queue" in r.record
    assert r.provenance == "receiver's own record" and r.anchor.startswith("client_id ")


def test_codex_turn_reply_matches_our_turn_not_the_previous_one():
    r = CodexTurnWatch(CODEX, client_id="01a22eb1-d485-71f3-b7a9-967de49adc42").poll()
    assert r is not None and r.text == "beta plain turn reply"
    by_text = CodexTurnWatch(CODEX, text="[relay/1 from=operator:relay@operator.vm.12539 to=peer "
                                         "id=operator.vm.12539-3 hop=0 want=reply] plain question").poll()
    assert by_text is not None and by_text.text == r.text and by_text.anchor == "the exact payload text"


def test_codex_turn_reply_waits_for_the_turn_to_end(tmp_path):
    lines = CODEX.read_text().splitlines(keepends=True)
    done = next(i for i, ln in enumerate(lines) if '"task_complete"' in ln)
    live = tmp_path / "rollout.jsonl"
    grow(live, CODEX, done)  # everything up to (not including) the first task_complete
    w = CodexTurnWatch(live, client_id="01a22eb0-5d27-7f11-b599-7fa020692369")
    assert w.poll() is None and w.turn_id == "01a22eb0-5d2e-77d1-8af0-49cffdafad56"
    assert w.poll() is None
    with live.open("a") as f:
        f.write(lines[done][: len(lines[done]) // 2])  # half a line: being written
    assert w.poll() is None
    grow(live, CODEX, done + 1)
    r = w.poll()
    assert r is not None and r.text == "final: beta is done"


def test_codex_unknown_client_id_and_aborted_and_empty_turns(tmp_path):
    assert CodexTurnWatch(CODEX, client_id="no-such-client-id").poll() is None
    turn = "t-1"
    recs = [
        {"type": "event_msg", "payload": {"type": "task_started", "turn_id": turn,
                                          "turn_attribution": {"turn_trigger": "queue"}}},
        {"type": "event_msg", "payload": {"type": "item_completed", "turn_id": turn,
                                          "item": {"type": "UserMessage", "client_id": "c-1", "content": []}}},
        {"type": "event_msg", "payload": {"type": "turn_aborted", "turn_id": turn, "reason": "interrupted"}},
    ]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = CodexTurnWatch(f, client_id="c-1").poll()
    assert r is not None and r.status == "aborted" and r.text is None and "interrupted" in r.record
    recs[2] = {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": turn, "last_agent_message": None}}
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = CodexTurnWatch(f, client_id="c-1").poll()
    assert r is not None and r.status == "no final message" and r.text is None
    with pytest.raises(ValueError):
        CodexTurnWatch(f)


# -- Claude ----------------------------------------------------------------------------


def test_claude_turn_reply_after_a_tool_call_is_the_end_turn_text():
    r = ClaudeTurnWatch(CLAUDE, msg_id="e2e82a0c-2026-45f5-98e9-281304eadf35").poll()
    assert r is not None and r.status == "answered"
    assert r.text == "alpha final answer: all good"  # not the "let me check" before the tool call
    assert "end_turn" in r.record and ".origin" in r.record and r.turn_id


def test_claude_message_absorbed_mid_turn_is_answered_by_that_turn():
    first = ClaudeTurnWatch(CLAUDE, msg_id="8684ecb9-705d-4be9-9b5f-6aa32371cc32").poll()
    second = ClaudeTurnWatch(CLAUDE, msg_id="1a0a77ef-ffd0-4f09-a0c9-355551b8c925").poll()
    assert first is not None and first.text == "answer one (saw both)"
    assert second is not None and second.text == "answer one (saw both)"
    assert "attachment.origin" in second.record


def test_claude_turn_reply_waits_until_the_turn_ends(tmp_path):
    lines = CLAUDE.read_text().splitlines(keepends=True)
    end = next(i for i, ln in enumerate(lines) if '"end_turn"' in ln and "alpha final answer" in ln)
    live = tmp_path / "t.jsonl"
    grow(live, CLAUDE, end)
    w = ClaudeTurnWatch(live, msg_id="e2e82a0c-2026-45f5-98e9-281304eadf35")
    assert w.poll() is None and w.found == "origin"
    grow(live, CLAUDE, end + 1)
    r = w.poll()
    assert r is not None and r.text == "alpha final answer: all good"


def test_claude_interrupted_turn_and_unknown_msg_id(tmp_path):
    assert ClaudeTurnWatch(CLAUDE, msg_id="00000000-0000-0000-0000-000000000000").poll() is None
    recs = [
        {"type": "user", "message": {"role": "user", "content": "typed hello"}, "origin": {"kind": "human"}},
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "working"}],
                                          "stop_reason": "tool_use"}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text",
                                                                  "text": "[Request interrupted by user]"}]}},
    ]
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = ClaudeTurnWatch(f, text="typed hello").poll()
    assert r is not None and r.status == "aborted" and r.text is None


def test_tail_resumes_after_the_last_complete_line(tmp_path):
    from relay_repl.agents.turn_reply import Tail

    f = tmp_path / "t.jsonl"
    f.write_text('{"n": 1}\nnot json\n{"n": 2}\n{"n": 3')
    t = Tail(f)
    assert [r["n"] for r in t] == [1, 2]
    assert list(t) == []
    with f.open("a") as h:
        h.write('}\n[1]\n{"n": 4}\n')
    assert [r["n"] for r in t] == [3, 4]
    assert list(Tail(tmp_path / "missing.jsonl")) == []
