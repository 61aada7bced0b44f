"""The agents' evidence readers on transcripts and rollouts recorded in the lab (fast)."""

from __future__ import annotations

import json
from pathlib import Path

from relay_repl.agents import agent_for
from relay_repl.agents.claude_code import claude_typed_records, find_origin_records
from relay_repl.agents.codex import codex_typed_items, find_in_rollout, turns_since

FIX = Path(__file__).parent / "fixtures"
TRANSCRIPT = FIX / "claude-2.1.328-transcript.jsonl"
TYPED_TRANSCRIPT = FIX / "claude-2.1.328-transcript-typed.jsonl"
ROLLOUT = FIX / "codex-0.169.0-rollout.jsonl"
TYPED_ROLLOUT = FIX / "codex-0.169.0-rollout-typed.jsonl"


def _offset_of(path: Path, needle: str) -> int:
    """Byte offset of the first line containing `needle`."""
    at = 0
    for line in path.read_bytes().splitlines(keepends=True):
        if needle.encode() in line:
            return at
        at += len(line)
    raise AssertionError(needle)


def test_find_origin_records_top_level_and_the_busy_receivers_attachment_origin():
    top = find_origin_records(TRANSCRIPT, "e2e82a0c-2026-45f5-98e9-281304eadf35")
    assert [(h["type"], h["where"]) for h in top] == [("user", "origin")]
    assert top[0]["origin"]["verifiedPeerPid"] == 9541 and "please answer" in top[0]["content"]
    absorbed = find_origin_records(TRANSCRIPT, "1a0a77ef-ffd0-4f09-a0c9-355551b8c925")
    assert [(h["type"], h["where"]) for h in absorbed] == [("attachment", "attachment.origin")]
    assert absorbed[0]["content"].endswith("second question id=1 quoted")  # the queued_command's prompt
    assert absorbed[0]["origin"]["verifiedPeerProcStart"] == "82881"
    assert find_origin_records(TRANSCRIPT, "00000000-0000-0000-0000-000000000000") == []


def test_claude_typed_records_top_level_and_enqueue():
    typed = "SLOW6 lab helper keeps alpha busy for 6s"
    hits = claude_typed_records(TYPED_TRANSCRIPT, 0, typed)
    assert [h["where"] for h in hits] == ["top-level user", "top-level user"]
    assert all(h["origin"]["kind"] == "human" for h in hits)
    after_first = hits[0]["offset"] + 1
    assert len(claude_typed_records(TYPED_TRANSCRIPT, after_first, typed)) == 1  # only records at/after the offset
    # a socket message is never a typed record, even with the same text
    peer_text = next(json.loads(ln)["content"] for ln in TYPED_TRANSCRIPT.read_text().splitlines()
                     if '"operation":"enqueue"' in ln)
    kinds = {h["where"] for h in claude_typed_records(TYPED_TRANSCRIPT, 0, peer_text)}
    assert kinds == {"queue-operation enqueue"}


def test_claude_agent_typed_evidence_states():
    agent = agent_for("claude-code")
    assert agent is not None
    ok = agent.evidence.typed_evidence(TYPED_TRANSCRIPT, 0, "SLOW6 lab helper keeps alpha busy for 6s")
    assert ok.state == "confirmed" and ok.landed and ok.data["matches"] == 2
    assert agent.evidence.typed_evidence(TYPED_TRANSCRIPT, 0, "never typed").state == "none"


def test_find_in_rollout_by_client_id_then_by_text():
    hit = find_in_rollout(ROLLOUT, client_id="01a22eb0-5d27-7f11-b599-7fa020692369", text="")
    assert hit is not None and hit["turn_trigger"] == "queue" and hit["turn_id"] == "01a22eb0-5d2e-77d1-8af0-49cffdafad56"
    assert find_in_rollout(ROLLOUT, client_id="not-ours", text=hit["text"]) is None  # a client_id never falls back
    by_text = find_in_rollout(ROLLOUT, client_id=None, text=hit["text"])
    assert by_text is not None and by_text["client_id"] == hit["client_id"]


def test_codex_typed_items_new_turn_and_steered():
    typed = "SLOW8 lab helper keeps beta busy for 8s"
    [h] = codex_typed_items(TYPED_ROLLOUT, 0, typed)
    assert h["turn_trigger"] == "user" and h["steered"] is False
    # read from just after the turn started: the message went into a turn already running
    started = _offset_of(TYPED_ROLLOUT, '"turn_id":"01a22ecc-2975-7800-b3e7-3ecdc33ba3ed"')
    [s] = codex_typed_items(TYPED_ROLLOUT, started + 1, typed)
    assert s["steered"] is True
    assert codex_typed_items(TYPED_ROLLOUT, 0, "never typed") == []


def test_codex_agent_typed_evidence_confirms_typed_turns_and_flags_queue_turns():
    agent = agent_for("codex")
    assert agent is not None
    ok = agent.evidence.typed_evidence(TYPED_ROLLOUT, 0, "SLOW8 lab helper keeps beta busy for 8s")
    assert ok.state == "confirmed" and "new turn (trigger user)" in ok.detail
    queued_text = find_in_rollout(TYPED_ROLLOUT, client_id="01a22ecc-2420-7602-a889-4e998440e456", text="")
    assert queued_text is not None
    wrong = agent.evidence.typed_evidence(TYPED_ROLLOUT, 0, queued_text["text"])  # a queue turn is not a typed one
    assert wrong.state == "mismatch" and wrong.landed and "'queue'" in wrong.detail


def test_turns_since_lists_the_turns_and_their_text():
    turns = turns_since(TYPED_ROLLOUT, 0)
    assert [t["trigger"] for t in turns] == ["queue", "user", "queue"]
    assert turns[1]["user"] == "SLOW8 lab helper keeps beta busy for 8s"


def test_a_threads_own_rollout_proves_its_relay_reply_call(tmp_path):
    """Which of a shared daemon's threads answered: the call in its own rollout (recorded
    lab rollout: codex:beta called the relay MCP tool relay_reply for operator.vm.6492-1)."""
    from relay_repl.agents.codex.evidence import holds_reply_call, pending_calls, reply_calls

    assert reply_calls(ROLLOUT, "operator.vm.6492-1", "beta answers via mcp") == 1
    assert reply_calls(ROLLOUT, "operator.vm.6492-1", "another text") == 0
    assert reply_calls(ROLLOUT, "operator.vm.6492-2", None) == 0
    assert pending_calls(ROLLOUT, "relay_reply") == []  # its output is recorded: not in flight

    def shell(cmd: str) -> dict:
        return {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd})}

    assert holds_reply_call(shell("relay reply op-1 'all tests pass'"), "op-1", "all tests pass")
    assert holds_reply_call(shell("/x/.venv/bin/relay reply op-1 all  tests pass"), "op-1", "all tests pass")
    assert not holds_reply_call(shell("relay reply op-12 all tests pass"), "op-1", "all tests pass")
    assert not holds_reply_call(shell("echo relay reply op-1 all tests pass"), "op-1", "x")
    assert not holds_reply_call(shell("CODEX_THREAD_ID=gamma relay whoami"), "op-1", None)

    rollout = tmp_path / "rollout.jsonl"
    call = {"type": "response_item", "payload": {"type": "function_call", "name": "relay_requests",
                                                 "arguments": "{}", "call_id": "c1"}}
    rollout.write_text(json.dumps(call) + "\n")
    assert pending_calls(rollout, "relay_requests") == ["c1"]
    out = {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "[]"}}
    rollout.write_text(json.dumps(call) + "\n" + json.dumps(out) + "\n")
    assert pending_calls(rollout, "relay_requests") == []


def test_a_receipt_counts_only_from_the_receiver_process():
    from relay_repl.core.inbound import Receipt

    r = Receipt(frame={"type": "control", "status": "delivered", "pid": 10}, pid=42, proc_start="777")
    assert r.sent_by(42, "777")[0] and r.get("status") == "delivered"
    assert r.sent_by(43, "777") == (False, "sent by pid 42, not by the receiver (pid 43)")
    assert not r.sent_by(42, "778")[0]  # the pid was reused by another process
    assert not r.sent_by(42, None)[0]


def test_rollout_scan_reads_only_what_was_appended_and_waits_for_a_line_being_written(tmp_path):
    from relay_repl.agents.codex import RolloutScan

    f = tmp_path / "rollout.jsonl"
    started = {"timestamp": "t0", "payload": {"type": "task_started", "turn_id": "T1",
                                              "turn_attribution": {"turn_trigger": "queue"}}}
    item = {"timestamp": "t1", "payload": {"type": "item_completed", "turn_id": "T1", "item": {
        "type": "UserMessage", "client_id": "c-1", "content": [{"type": "text", "text": "hello"}]}}}
    f.write_text(json.dumps(started) + "\n")
    scan = RolloutScan(f)
    assert scan.find(client_id="c-1", text="hello") is None
    line = json.dumps(item) + "\n"
    with f.open("a") as w:
        w.write(line[:20])  # Codex is still writing the line: not parsed yet
    assert scan.find(client_id="c-1", text="hello") is None
    with f.open("a") as w:
        w.write(line[20:])
    hit = scan.find(client_id="c-1", text="hello")
    assert hit == {"turn_id": "T1", "turn_trigger": "queue", "client_id": "c-1", "text": "hello", "at": "t1"}
    assert hit == find_in_rollout(f, client_id="c-1", text="")  # the one-shot reader agrees
    f.write_bytes(b"x" * f.stat().st_size + b"\n")  # earlier bytes are never read again
    assert scan.find(client_id="c-1", text="hello") == hit


def test_a_threads_own_rollout_proves_its_relay_send_and_status_calls_in_flight(tmp_path):
    """Which of a shared daemon's threads asked relay to send (issue 31): the relay_send call (or the
    `relay ask` command) for exactly those words, still without output, in its own rollout."""
    from relay_repl.agents.codex.evidence import (holds_send_call, holds_status_call, pending_send_calls,
                                                  pending_status_calls)

    def shell(cmd: str) -> dict:
        return {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd})}

    def mcp(name: str, **args: str) -> dict:
        return {"type": "function_call", "name": name, "arguments": json.dumps(args)}

    assert holds_send_call(mcp("relay_send", to="claude:alpha", body="please  review x"), "please review x")
    assert not holds_send_call(mcp("relay_send", to="claude:alpha", body="please review y"), "please review x")
    assert holds_send_call(shell("/v/bin/relay ask claude:alpha 'please review x' --want reply"), "please review x")
    assert not holds_send_call(shell("relay ask --status beta-1"), "beta-1")
    assert not holds_send_call(shell("relay reply op-1 'please review x'"), "please review x")
    assert holds_status_call(mcp("relay_request_status", request="beta-1"), "beta-1")
    assert not holds_status_call(mcp("relay_request_status", request="beta-12"), "beta-1")
    assert holds_status_call(shell("relay ask --status beta-1"), "beta-1")
    assert not holds_status_call(shell("relay ask --status beta-12"), "beta-1")

    rollout = tmp_path / "rollout.jsonl"
    call = {"type": "response_item", "payload": {**mcp("relay_send", to="claude:alpha", body="hi there"),
                                                 "call_id": "c7"}}
    status = {"type": "response_item", "payload": {**shell("relay ask --status beta-1"), "call_id": "c8"}}
    rollout.write_text(json.dumps(call) + "\n" + json.dumps(status) + "\n")
    assert pending_send_calls(rollout, "hi there") == ["c7"] and pending_send_calls(rollout, "other") == []
    assert pending_status_calls(rollout, "beta-1") == ["c8"]
    out = {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c7", "output": "held"}}
    rollout.write_text("\n".join(json.dumps(x) for x in (call, status, out)) + "\n")
    assert pending_send_calls(rollout, "hi there") == [], "answered: no longer in flight"


def _growing(tmp_path: Path, upto: int) -> tuple[Path, list[bytes]]:
    """A copy of the recorded transcript holding its first `upto` lines; the rest to append."""
    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines[:upto]))
    return path, lines[upto:]


def test_a_confirm_poll_reads_only_what_the_transcript_gained(tmp_path, monkeypatch):
    """find_origin_records is asked every poll of a send's confirm: it parses only the lines appended
    since it was last asked, and of those only the ones that carry the id (issue 33: it parsed the
    whole transcript each poll). The answer is the one a whole read gives, at every step."""
    import relay_repl.store.jsonl as jsonl

    msg = "1a0a77ef-ffd0-4f09-a0c9-355551b8c925"  # absorbed mid-turn: late in the file
    whole = find_origin_records(TRANSCRIPT, msg)
    at = _offset_of(TRANSCRIPT, msg)
    cut = TRANSCRIPT.read_bytes()[:at].count(b"\n")
    path, rest = _growing(tmp_path, cut)
    parsed: list[bytes] = []
    real = jsonl.parse_object
    monkeypatch.setattr(jsonl, "parse_object", lambda raw: parsed.append(raw) or real(raw))
    assert find_origin_records(path, msg) == [] and parsed == []  # no line carries it: none parsed
    with open(path, "ab") as f:
        f.write(rest[0][:-5])  # the record, still being written
    assert find_origin_records(path, msg) == []
    with open(path, "ab") as f:
        f.write(rest[0][-5:] + b"".join(rest[1:]))
    assert find_origin_records(path, msg) == whole and len(parsed) == 1
    assert find_origin_records(path, msg) == whole and len(parsed) == 1  # nothing new: nothing read


def test_a_transcript_replaced_or_rewritten_is_read_again(tmp_path):
    msg = "e2e82a0c-2026-45f5-98e9-281304eadf35"
    path, _rest = _growing(tmp_path, 48)
    assert len(find_origin_records(path, msg)) == 1
    other = tmp_path / "other.jsonl"  # /clear or resume: another file at that name
    other.write_bytes(b"".join(ln for ln in TRANSCRIPT.read_bytes().splitlines(keepends=True) if msg.encode() not in ln))
    other.replace(path)
    assert find_origin_records(path, msg) == []
    data = TRANSCRIPT.read_bytes()
    path.write_bytes(data)  # the record back in the middle (the last line read is no longer where it was)
    assert len(find_origin_records(path, msg)) == 1
    lines = data.splitlines(keepends=True)
    kept = [ln for ln in lines if msg.encode() not in ln]
    path.write_bytes(b"".join(kept[:-1]))  # cut short in place (same inode): read again
    assert find_origin_records(path, msg) == []
    path.write_bytes(data)
    assert len(find_origin_records(path, msg)) == 1
    gone = data.replace(msg.encode(), b"00000000-0000-0000-0000-000000000000")[:-2] + b" \n"
    assert len(gone) == len(data)  # rewritten in place, same size, its last line changed too: read again
    path.write_bytes(gone)
    assert find_origin_records(path, msg) == []


def _queue_db(path: Path):
    """A queue_1.sqlite as Codex 0.169.0 holds it: WAL, a writer keeping it open."""
    import sqlite3

    w = sqlite3.connect(path)
    w.execute("PRAGMA journal_mode=WAL")
    w.execute("CREATE TABLE queued_items (id TEXT PRIMARY KEY, thread_id TEXT, queue_order INTEGER, "
              "payload_json TEXT, state TEXT, failure_jsonb TEXT)")
    for i in range(3):
        w.execute("INSERT INTO queued_items VALUES (?, 't', ?, ?, 'pending', NULL)",
                  (f"i{i}", i, json.dumps({"UserInput": {"client_id": f"c{i}"}})))
    w.commit()
    return w


def test_a_confirms_queue_reads_share_one_connection_and_see_every_commit(tmp_path, monkeypatch):
    """Issue 33: each confirm poll opened queue_1.sqlite and read its schema again; a QueueReader
    opens it once for the polls (old code: a connection per read; mutant/old code fails it), yet
    sees the writer's later commits, a file replaced at the path, and a writer gone (no -wal)."""
    import relay_repl.agents.codex.evidence as ev

    w = _queue_db(tmp_path / "queue_1.sqlite")
    opened: list[str] = []
    real = ev.connect_read_only
    monkeypatch.setattr(ev, "connect_read_only", lambda p, *a, **kw: opened.append(str(p)) or real(p, *a, **kw))
    reader = ev.QueueReader(tmp_path)
    assert reader.read("i2") == {"thread_id": "t", "queue_order": 2, "ahead": 2, "client_id": "c2", "state": "pending",
                                 "failure": None}
    w.execute("DELETE FROM queued_items WHERE id = 'i0'")
    w.commit()
    assert reader.read("i2")["ahead"] == 1  # type: ignore[index]
    w.execute("UPDATE queued_items SET state = 'failed', failure_jsonb = '\"boom\"' WHERE id = 'i2'")
    w.commit()
    assert reader.read("i2")["state"] == "failed"  # type: ignore[index]
    w.execute("DELETE FROM queued_items WHERE id = 'i2'")
    w.commit()
    assert reader.read("i2") is None and reader.read("i1") is not None
    assert len(opened) == 1  # five reads, one connection
    # a new file at the path (a new database): opened anew, never the old one's rows
    w.close()
    (tmp_path / "queue_1.sqlite").rename(tmp_path / "old.sqlite")
    for side in ("-wal", "-shm"):
        (tmp_path / f"old.sqlite{side}").unlink(missing_ok=True)
    w2 = _queue_db(tmp_path / "queue_1.sqlite")
    w2.execute("DELETE FROM queued_items WHERE id = 'i1'")
    w2.commit()
    assert reader.read("i1") is None and len(opened) == 2
    reader.close()
    w2.close()  # the writer gone, its -wal checkpointed away: read as read_item does (immutable, per read)
    assert not (tmp_path / "queue_1.sqlite-wal").exists()
    assert reader.read("i2") is not None and reader._con is None and len(opened) == 3
    assert reader.read("i2") is not None and len(opened) == 4 and not (tmp_path / "queue_1.sqlite-wal").exists()


def test_rollout_scan_parses_only_the_lines_it_reads(monkeypatch):
    """A confirm's first poll read the whole rollout, every line parsed as JSON (issue 33); lines that
    are neither a task_started nor a UserMessage are skipped unparsed, with the same hit (old code
    parsed every line; mutant/old code fails it)."""
    import relay_repl.agents.codex.evidence as ev
    from relay_repl.store import jsonl

    parsed: list[bytes] = []
    real = jsonl.parse_object
    monkeypatch.setattr(jsonl, "parse_object", lambda raw: parsed.append(raw) or real(raw))
    lines = ROLLOUT.read_bytes().splitlines()
    first = next(json.loads(x) for x in lines if b'"UserMessage"' in x and b'"item_completed"' in x)
    item = first["payload"]["item"]
    text = "".join(c.get("text", "") for c in item["content"])
    hit = ev.RolloutScan(ROLLOUT).find(client_id=None, text=text)
    assert hit is not None and hit == find_in_rollout(ROLLOUT, client_id=None, text=text)
    assert hit["turn_trigger"] is not None
    wanted = sum(1 for x in lines if b'"task_started"' in x or b'"UserMessage"' in x)
    assert 0 < len(parsed) // 2 <= wanted < len(lines) // 2  # both scans: only their lines, a few of the file's
