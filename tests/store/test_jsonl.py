from __future__ import annotations

from relay_repl.store.jsonl import records


def test_complete_object_lines_only_with_offsets(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a":1}\nnot json\n[1,2]\n{"b":2}\n{"c":')  # the last line is still being written
    got = list(records(p))
    assert got == [(0, {"a": 1}), (23, {"b": 2})]
    assert list(records(p, offset=23)) == [(23, {"b": 2})]
    with open(p, "ab") as f:  # the writer finishes the line
        f.write(b'3}\n')
    assert [r for _, r in records(p, offset=23)] == [{"b": 2}, {"c": 3}]


def test_missing_file_yields_nothing(tmp_path):
    assert list(records(tmp_path / "absent.jsonl")) == []


def test_latest_first_reads_only_the_tail_newest_first(tmp_path):
    from relay_repl.store.jsonl import latest_first

    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"k":"mode","v":1}\n{"x":0}\n{"k":"mode","v":2}\n{"k":"mode","v":')
    assert [r["v"] for r in latest_first(p, tail=10_000, containing=b'"mode"')] == [2, 1]
    # a tail that cuts the first line never parses the cut piece
    assert [r["v"] for r in latest_first(p, tail=len(p.read_bytes()) - 3, containing=b'"mode"')] == [2]
    assert list(latest_first(tmp_path / "none", tail=10, containing=b"x")) == []


def test_a_fifo_or_a_directory_in_a_records_place_yields_nothing_and_never_blocks(tmp_path):
    """Issue 32: a transcript or rollout path a peer replaced by a FIFO made `open()` wait for a
    writer for ever (discovery, turn replies, `relay verify`). Now it reads as no records."""
    import os
    import threading

    from relay_repl.store import jsonl

    fifo, folder = tmp_path / "t.jsonl", tmp_path / "d.jsonl"
    os.mkfifo(fifo)
    folder.mkdir()
    got: dict = {}

    def read() -> None:
        got["lines"] = [list(jsonl.complete_lines(p)) for p in (fifo, folder)]
        got["latest"] = [list(jsonl.latest_first(p, tail=100, containing=b"x")) for p in (fifo, folder)]

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "a FIFO was opened for a blocking read"
    assert got == {"lines": [[], []], "latest": [[], []]}


def test_latest_first_finds_the_lines_a_whole_split_finds(tmp_path):
    """latest_first searches the tail for the needle instead of splitting every line: the same records,
    in the same order (newest first), whatever the tail cuts (mid-line, at a newline, the needle
    across the cut), a last line still being written, lines carrying the needle twice, garbage."""
    import json
    import random

    from relay_repl.store.jsonl import latest_first

    def reference(data: bytes, start: int, needle: bytes) -> list[dict]:
        pieces = data.split(b"\n")[:-1]
        if start:
            pieces = pieces[1:]
        out = []
        for raw in reversed(pieces):
            if needle in raw:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    out.append(rec)
        return out

    rng = random.Random(33)
    lines = []
    for i in range(300):
        kind = rng.choice(["hit", "hit2", "miss", "garbage", "list"])
        lines.append({"hit": json.dumps({"i": i, "id": "op-7"}), "hit2": json.dumps({"i": i, "a": "op-7", "b": "op-7"}),
                      "miss": json.dumps({"i": i, "id": "op-8"}), "garbage": "op-7 {not json",
                      "list": json.dumps(["op-7", i])}[kind])
    data = ("\n".join(lines) + "\n" + '{"i": -1, "id": "op-7"').encode()  # the last line still being written
    p = tmp_path / "r.jsonl"
    p.write_bytes(data)
    for tail in [len(data) + 5, len(data), *rng.sample(range(1, len(data)), 60)]:
        start = max(0, len(data) - tail)
        for needle in (b"op-7", b'"id": "op-7"', b"7", b""):
            assert list(latest_first(p, tail=tail, containing=needle)) == reference(data[start:], start, needle), (tail, needle)


def test_appended_lines_are_the_complete_lines_holding_the_needle_whatever_the_chunk(tmp_path):
    from relay_repl.store.jsonl import appended_lines, complete_lines

    p = tmp_path / "t.jsonl"
    lines = [b'{"n":%d,"x":"%s"}\n' % (i, b"ab" * (i % 7) + (b"NEEDLE" if i % 5 == 3 else b"")) for i in range(40)]
    p.write_bytes(b"".join(lines) + b'{"unfinished":')
    for chunk in (1, 7, 64, 1 << 20):
        for offset in (0, len(lines[0]), len(b"".join(lines[:11]))):
            every = list(complete_lines(p, offset))
            got, end, tail = appended_lines(p, offset, b"NEEDLE", chunk=chunk)
            assert got == [(at, raw) for at, raw in every if b"NEEDLE" in raw]
            assert end == every[-1][0] + len(every[-1][1]) and tail == every[-1][1][-64:]
            assert appended_lines(p, offset, None, chunk=chunk)[0] == every
    size = len(b"".join(lines))
    assert appended_lines(p, size, b"NEEDLE") == ([], size, b"")  # only the unfinished line after it
    assert appended_lines(tmp_path / "absent", 0, b"x") == ([], 0, b"")
