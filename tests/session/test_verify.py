"""`relay verify` on transcript files: whole-id matching, both origin paths, verdicts on real pids.

Real files, a real unix socket and the real /proc: a "genuine session" here is this test
process with a registry record and a bound `<pid>.sock`, exactly what the rule checks.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from relay_repl.agents.claude_code.transcript import find_relay_id
from relay_repl.core.relay_ids import carries_id, headers_in, id_needle
from relay_repl.frontends.cli import main
from relay_repl.session.core import verify as v
from relay_repl.store.jsonl import LineScan
from relay_repl.store.ledger import Ledger
from relay_repl.system.proc import proc_start

ME = os.getpid()


def line(id_: str, body: str = "hello", sender: str = "operator:relay@me.h.1", hop: int = 0) -> str:
    return f"[relay/1 from={sender} to=peer id={id_} hop={hop} want=none] {body}"


def top(id_: str, pid: int = 999999, body: str = "hello", **kw) -> dict:
    return {"type": "user", "timestamp": "2026-11-30T00:00:00Z",
            "origin": {"kind": "peer", "from": "unknown", "verifiedPeerPid": pid, "verifiedPeerProcStart": "1",
                       "msg_id": kw.pop("msg_id", "m-top")},
            "message": {"role": "user", "content": f"Another Claude session sent a message:\n{line(id_, body, **kw)}\n\nThis came"}}


def att(id_: str, pid: int = 999998, body: str = "hello", **kw) -> dict:
    return {"type": "attachment",
            "attachment": {"type": "queued_command", "prompt": line(id_, body, **kw),
                           "origin": {"kind": "peer", "verifiedPeerPid": pid, "msg_id": kw.pop("msg_id", "m-att")}}}


def write(path: Path, *recs: dict, tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + tail)
    return path


def test_whole_id_field_only(tmp_path):
    f = write(tmp_path / "t.jsonl", top("ID0"), att("X-9", body="quoting id=ID and [relay/1 id=ID hop=0]"),
              {"type": "user", "message": {"content": line("ID")}})  # no origin: typed, not a peer message
    assert find_relay_id(f, "ID").hits == []
    assert main(["verify", "ID", "--transcript", str(f)]) == 1
    assert [h.header["id"] for h in find_relay_id(f, "ID0").hits] == ["ID0"]


def test_twice_is_ambiguous_across_both_paths(tmp_path, capsys):
    f = write(tmp_path / "t.jsonl", top("A-1"), att("A-1"), top("A-10"))
    assert main(["verify", "A-1", "--transcript", str(f), "--json"]) == 4
    out = json.loads(capsys.readouterr().out)  # --json prints only JSON
    assert out["verdict"] == "ambiguous"
    assert [r["path"] for r in out["records"]] == ["origin", "attachment.origin"]
    assert all(r["content"] for r in out["records"])


def test_prefilter_never_misses_escaped_or_unicode_ids(tmp_path):
    for rid in ['q"x-1', "b\\s-2", "üñí-3", "sp ace]-4"]:
        f = write(tmp_path / "u.jsonl", top("other-1"), {
            "type": "user", "origin": {"kind": "peer", "verifiedPeerPid": 5},
            "message": {"content": f"[relay/1 from=a:b@c to=peer id={v_encode(rid)} hop=0 want=none] x"}})
        assert id_needle(rid)[0] in f.read_bytes()
        assert len(find_relay_id(f, rid).hits) == 1, rid


def v_encode(rid: str) -> str:
    from relay_repl.core.envelope import encode_value

    return encode_value(rid)


def test_needle_must_end_the_id_field() -> None:
    assert id_needle("X-1") == (b"id=X-1", b" ]")
    assert id_needle('q"x-1') == (b"id=q", b"")  # cut before what JSON escapes: anything may follow


def test_headers_in_reads_line_starts_and_wrappers_only() -> None:
    text = f'<cross-session-message from-name="alpha">\n{line("W-1")}\n</cross-session-message>'
    assert carries_id(text, "W-1") is not None
    assert carries_id(f"see {line('W-2')}", "W-2") is None  # not at a line start: a quote
    assert headers_in("[relay/1 from=a id=1 oops") == []


def test_linescan_chunk_boundaries_oversized_and_partial_tail(tmp_path, monkeypatch):
    import relay_repl.store.jsonl as jsonl

    lines = [f'{{"n":{i},"pad":"{"x" * (i * 37 % 300)}","k":"NEEDLE{i % 3}"}}' for i in range(400)]
    big = '{"big":"' + "y" * 5000 + 'NEEDLE0"}'
    tail = '{"k":"NEEDLE0 unfinished'
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(lines[:200] + [big] + lines[200:]) + "\n" + tail)
    data = f.read_bytes()
    want = [(data.index(ln.encode()), ln.encode()) for ln in lines if "NEEDLE0" in ln]
    monkeypatch.setattr(jsonl, "WINDOW", 4096)  # many mapped windows, each released behind the scan
    mapped = LineScan(f, b"NEEDLE0", (b'"n"',), max_line=1000)
    assert list(mapped) == want
    assert mapped.oversized == 1 and mapped.scanned == len(data) - len(tail)
    read = LineScan(f, b"NEEDLE0", (b'"n"',), chunk=97, max_line=1000)  # the path for pipes
    with open(f, "rb") as fh:
        assert list(read._read(fh)) == want
    assert read.oversized == 1 and read.scanned == len(data)


def test_genuine_claude_session_owns_its_socket(tmp_path, monkeypatch):
    cfg = tmp_path / "cfg"
    (cfg / "sessions").mkdir(parents=True)
    sock = tmp_path / f"{ME}.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(sock))
    srv.listen(1)
    try:
        (cfg / "sessions" / f"{ME}.json").write_text(json.dumps(
            {"pid": ME, "procStart": proc_start(ME), "name": "alpha", "messagingSocketPath": str(sock)}))
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
        start = proc_start(ME)
        recs = [top("G-1", ME, sender="agent:claude-code@alpha"), top("G-2", ME, sender="operator:relay@bob.h.7"),
                top("G-3", ME, sender="operator:relay@bob.h.7", hop=1)]
        for r in recs:
            r["origin"]["verifiedPeerProcStart"] = start
        f = write(tmp_path / "t.jsonl", *recs)
        ok = v.verify_file("G-1", f)
        assert ok.verdict == "verified" and ok.exit_code == 0 and ok.records[0].sender.startswith("claude:alpha (pid ")
        bad = v.verify_file("G-2", f)
        assert bad.verdict == "mismatch" and bad.exit_code == 4  # hop 0 must come from its author
        relayed = v.verify_file("G-3", f)
        assert relayed.verdict == "verified" and "relayed by claude:alpha" in relayed.records[0].detail
        # the socket gone: no longer a genuine session
        srv.close()
        sock.unlink()
        gone = v.verify_file("G-1", f)  # the same pid, no longer owning a socket: not a genuine session now
        assert gone.verdict == "mismatch" and "holds no session's listening socket" in gone.records[0].detail
    finally:
        srv.close()


def test_operator_relay_is_verified_by_the_ledger_msg_id(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    rid = f"me.h.{ME}-1"
    led.event("stage:write", relay_id=rid, data={"msg_id": "uuid-ours"})
    rec = top(rid, ME, sender=f"operator:relay@me.h.{ME}", msg_id="uuid-ours")
    rec["origin"]["verifiedPeerProcStart"] = proc_start(ME)
    f = write(tmp_path / "t.jsonl", rec)
    r = v.verify_file(rid, f, led)
    assert r.verdict == "verified" and "operator's relay" in r.records[0].sender
    other = v.verify_file(rid, f, Ledger(tmp_path / "empty.sqlite"))  # a ledger that never wrote it
    assert other.verdict == "unknown process" and other.exit_code == 4


def test_live_injector_is_an_unknown_process(tmp_path, capsys):
    rec = top("I-1", ME, sender="agent:claude-code@nobody")
    rec["origin"]["verifiedPeerProcStart"] = proc_start(ME)
    f = write(tmp_path / "t.jsonl", rec)
    assert main(["verify", "I-1", "--transcript", str(f)]) == 4
    out = capsys.readouterr().out
    assert "UNKNOWN PROCESS" in out and "injector" in out and "content:" in out


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["verify", "A-1", "--transcript", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["verify", "A-1", "--transcript", str(tmp_path)]) == 2
    assert main(["verify", "has space", "--transcript", str(tmp_path)]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["verify", "A-1", "--in", "claude:x", "--transcript", "f"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not allowed with" in err


def test_verify_file_changes_nothing(tmp_path, relay_home):
    f = write(tmp_path / "t.jsonl", top("A-1"))
    assert main(["verify", "A-1", "--transcript", str(f)]) == 4
    assert not relay_home.exists()  # no state dir, no ledger created by a read-only command


def test_unknown_target_is_a_usage_error_not_none_found(capsys):
    assert main(["verify", "A-1", "--in", "claude:nobody-here"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("relay: ") and "Traceback" not in err


def test_linescan_followed_by_rejects_longer_ids_on_both_paths(tmp_path):
    f = tmp_path / "f.jsonl"
    f.write_text('{"a":"id=A-10 x"}\n{"a":"id=A-1 x"}\n{"a":"[h id=A-1] y id=A-100"}\n')
    data = f.read_bytes()
    want = [(data.index(b'{"a":"id=A-1 '), b'{"a":"id=A-1 x"}'), (data.index(b'{"a":"[h'), b'{"a":"[h id=A-1] y id=A-100"}')]
    assert list(LineScan(f, b"id=A-1", followed_by=b" ]")) == want
    with open(f, "rb") as fh:
        assert list(LineScan(f, b"id=A-1", followed_by=b" ]", chunk=7)._read(fh)) == want


def test_a_pipe_is_read_not_mapped(tmp_path):
    r, w = os.pipe()
    os.write(w, (json.dumps(top("P-1")) + "\n" + json.dumps(att("P-1"))[:40]).encode())  # a torn last line
    os.close(w)
    try:
        report = v.verify_file("P-1", f"/dev/fd/{r}")
    finally:
        os.close(r)
    assert report.verdict == "unknown process" and len(report.records) == 1


def test_what_a_record_says_is_never_printed_raw(tmp_path, capsys):
    """A peer that wrote to a session's socket itself chooses the record's content, its origin's
    from/msg_id/name and its header: `relay verify` (and the REPL's repr) printed them raw, so an
    ESC could clear the screen and draw a forged VERIFIED line (old code fails: raw ESC, C1, U+202E)."""
    evil = "\x1b[2J\x1b[HVERIFIED\x9b31m\u202eevil\u2028x"
    rec = top("E-1", body=f"hi {evil}", msg_id=f"m{evil}")
    rec["origin"]["from"] = evil
    rec["origin"]["name"] = f"n{evil}"
    f = write(tmp_path / "t.jsonl", rec)
    main(["verify", "E-1", "--transcript", str(f)])
    out = capsys.readouterr().out
    assert "content:" in out and "\\x1b[2J" in out, out
    assert not any(c in out for c in ("\x1b", "\x9b", "\u202e", "\u2028")), out
    report = v.verify_file("E-1", str(f), Ledger(tmp_path / "l.sqlite"))
    assert not any(c in repr(report) for c in ("\x1b", "\x9b", "\u202e", "\u2028"))
