"""When Claude has finished writing a turn, read from a real Claude Code 2.1.332 transcript recorded in
the lab (bench/claude_late_writes.py, kept as written, bytes unchanged: the metadata re-append is
counted in bytes). It starts with a metadata re-append block and holds eleven socket-delivered turns;
the sixth brings the bytes since that block past 32 KiB, and the re-append follows its turn_duration."""

from __future__ import annotations

import json
from pathlib import Path

from relay_repl.agents.claude_code.transcript import REAPPEND_BYTES, turn_written

FIX = Path(__file__).parent / "fixtures" / "claude-2.1.332-transcript-reappend.jsonl"
LINES = FIX.read_bytes().splitlines(keepends=True)
RECORDS = [json.loads(raw) for raw in LINES]
MSG_IDS = [r["origin"]["msg_id"] for r in RECORDS if isinstance(r.get("origin"), dict)]
DUE = "59fe68d9-9fe9-4c67-bf89-15b6fc1c2617"
"""The turn after whose turn_duration Claude re-appended its metadata."""


def upto(dst: Path, n: int, extra: bytes = b"") -> Path:
    """The first `n` records (and `extra`), as the file read at some moment of its writing."""
    dst.write_bytes(b"".join(LINES[:n]) + extra)
    return dst


def index(pred) -> int:
    return next(i for i, r in enumerate(RECORDS) if pred(r))


def test_the_fixture_is_what_the_docstring_says():
    assert len(MSG_IDS) == 11 and RECORDS[0]["type"] == "last-prompt"
    reappend = index(lambda r: r["type"] == "last-prompt" and r is not RECORDS[0])
    assert RECORDS[reappend - 1].get("subtype") == "turn_duration"
    assert sum(map(len, LINES[6:reappend])) >= REAPPEND_BYTES > sum(map(len, LINES[6:reappend - 6]))


def test_a_turn_is_written_once_its_turn_duration_is_in(tmp_path):
    for msg_id in MSG_IDS:
        if msg_id == DUE:
            continue
        ours = index(lambda r, m=msg_id: (r.get("origin") or {}).get("msg_id") == m)
        end = next(i for i in range(ours, len(RECORDS)) if RECORDS[i].get("subtype") == "turn_duration")
        f = tmp_path / "t.jsonl"
        assert turn_written(upto(f, ours), msg_id) is None  # not read yet
        assert turn_written(upto(f, end), msg_id) is None  # its final assistant record in, turn_duration not
        assert turn_written(upto(f, end, LINES[end][:40]), msg_id) is None  # turn_duration half written
        proof = turn_written(upto(f, end + 1), msg_id)
        assert proof is not None and proof.startswith("turn_duration at byte") and msg_id in proof


def test_a_due_metadata_reappend_keeps_the_turn_unwritten_until_it_is_in(tmp_path):
    end = index(lambda r: r is not RECORDS[0] and r["type"] == "last-prompt") - 1
    f = tmp_path / "t.jsonl"
    assert turn_written(upto(f, end + 1), DUE) is None  # turn_duration in, 32941 bytes since the last block
    assert turn_written(upto(f, end + 2), DUE) is None  # a lone metadata record is not a block
    proof = turn_written(upto(f, end + 7), DUE)
    assert proof is not None and "0 bytes since the last metadata block" in proof


def test_the_latest_turn_without_a_msg_id(tmp_path):
    f = tmp_path / "t.jsonl"
    assert turn_written(FIX) is not None and turn_written(FIX, MSG_IDS[-1]) is not None
    last = index(lambda r: (r.get("origin") or {}).get("msg_id") == MSG_IDS[-1])
    assert turn_written(upto(f, last + 1)) is None  # a turn under way
    assert turn_written(upto(f, last + 1), MSG_IDS[0]) is not None  # an earlier turn stays written
    assert turn_written(upto(f, 6)) == "no turn (no origin record); 0 bytes since the last metadata block " \
        "(< 32768: no re-append due)"


def test_an_unknown_msg_id_or_a_missing_file_is_never_written(tmp_path):
    assert turn_written(FIX, "no-such-msg-id") is None
    assert turn_written(tmp_path / "missing.jsonl", MSG_IDS[0]) is None


def test_an_interrupted_turn_ends_without_turn_duration(tmp_path):
    last = index(lambda r: (r.get("origin") or {}).get("msg_id") == MSG_IDS[-1])
    marker = {"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user]"}]}, "uuid": "u-1"}
    f = upto(tmp_path / "t.jsonl", last + 1, json.dumps(marker).encode() + b"\n")
    proof = turn_written(f, MSG_IDS[-1])
    assert proof is not None and proof.startswith("interrupted at byte")
