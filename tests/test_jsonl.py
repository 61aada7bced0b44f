from __future__ import annotations

from relay_repl.jsonl import records


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
