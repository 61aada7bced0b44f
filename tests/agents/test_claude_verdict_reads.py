"""What a Claude verdict reads (issue 33: the inbox judges every reply by walking the peer pid's
parents and asking each kind about each pid; relay's own CPU per round trip). Real processes, a real
listening Unix socket, real /proc: the same answers as before, from fewer reads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import relay_repl.agents.claude_code.provider as claude_provider
from relay_repl.system.proc import listening_socket_inodes, owns_listening_socket
from tests.agents.test_claude_registry import cfg, provider, write_record  # noqa: F401
from tests.agents.fd_reads import fd_link_reads

SESSION = textwrap.dedent("""
    import socket, sys
    files = [open(p, "a") for p in sys.argv[2:]]  # descriptors opened before the inbox's: a session's other files
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sys.argv[1])
    s.listen()
    print("listening", flush=True)
    sys.stdin.read()
""")


@pytest.fixture
def session(tmp_path):
    """A process that holds 30 files open and then listens on its inbox socket, as a Claude session does."""
    started: list[subprocess.Popen[str]] = []

    def start(sock: str) -> int:
        others = [str(tmp_path / f"open{i}.log") for i in range(30)]
        p = subprocess.Popen([sys.executable, "-c", SESSION, sock, *others], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        started.append(p)
        assert p.stdout is not None and p.stdout.readline().strip() == "listening"
        return p.pid

    yield start
    for p in started:
        p.kill()
        p.wait()


def test_a_pid_with_no_record_is_no_session_without_reading_or_raising(cfg, tmp_path, monkeypatch):  # noqa: F811
    """Every pid of a Codex reply's chain is asked of Claude too (36 asks for 24 replies): where no
    `sessions/<pid>.json` exists, the answer (None) comes from one lstat, as outside.py's rule has it, not
    from a read that raises a FileProblem to be caught (old code reads it: fails). A record that is
    there, even a broken one, is still read and judged."""
    def no_read(*a: Any, **k: Any) -> bytes:
        raise AssertionError("read a session record that does not exist")

    p = provider(cfg, tmp_path)
    monkeypatch.setattr(claude_provider, "read_bytes", no_read)
    assert p.identify_process(os.getpid()) is None
    (cfg / "sessions" / f"{os.getpid()}.json").symlink_to(tmp_path / "nowhere.json")  # dangling: exists as a name
    with pytest.raises(AssertionError, match="does not exist"):
        p.identify_process(os.getpid())


def test_a_session_is_found_again_through_the_descriptor_its_socket_was_held_through(
        cfg, tmp_path, session, monkeypatch):  # noqa: F811
    """The session's pid holds its listening socket through one of many descriptors (a Claude process
    has a dozen and more). Asked again (every Claude reply), the descriptor it was found through last
    time is read first: one link read instead of every one before it (old code: 31). The answer is
    read now all the same: a process that closed it, or another pid, is no session."""
    sock = str(tmp_path / "inbox.sock")
    pid = session(sock)
    write_record(cfg, pid, sock=sock)
    p = provider(cfg, tmp_path)
    links = fd_link_reads(monkeypatch, pid)
    first = p.identify_process(pid)
    assert first is not None and first.spec == "claude:alpha" and first.pid == pid
    assert len(links) > 30
    links.clear()
    again = p.identify_process(pid)
    assert again is not None and again.spec == "claude:alpha" and len(links) == 1, links
    other = tmp_path / "other.sock"
    other_pid = session(str(other))
    write_record(cfg, other_pid, name="beta", sock=sock)  # claims alpha's socket: it holds another
    assert p.identify_process(other_pid) is None


def test_a_name_that_is_not_utf8_elsewhere_in_the_socket_table_hides_no_session(tmp_path):
    """/proc/<pid>/net/unix lists every socket of the namespace: one bound at a path that is not
    UTF-8 (any process may bind one) made the whole table unreadable, so every Claude session's
    verdict said "not a session" (old code: an empty set). The table is read as the bytes it is,
    and only the lines ending in the socket's own path are split."""
    fake = tmp_path / "proc"
    (fake / "77" / "net").mkdir(parents=True)
    want = "/run/cc-socks/alpha.sock"
    (fake / "77" / "net" / "unix").write_bytes(
        b"Num       RefCount Protocol Flags    Type St Inode Path\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 4242 /tmp/caf\xe9.sock\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 5151 " + want.encode() + b"\n"
        b"0000000000000000: 00000003 00000000 00000000 0001 03 6161 " + want.encode() + b"\n"  # connected, not listening
        b"0000000000000000: 00000002 00000000 00010000 0001 01 7171 " + want.encode() + b".old\n")
    assert listening_socket_inodes(want, 77, fake) == {5151}
    assert listening_socket_inodes(want, 78, fake) == set()
    assert not owns_listening_socket(78, want, Path(fake))


def test_a_confirm_poll_steps_through_no_transcript_line_that_lacks_our_msg_id(tmp_path, monkeypatch):
    """Issue 33: each confirm's first poll walked every line of the receiver's transcript in Python
    (the msg_id is new, so the scan starts at 0), one step per line, growing with the session.
    Lines without the needle are now skipped by a search of each chunk read. The old code fails it
    (401 lines stepped through for one hit)."""
    import json as _json
    import uuid as _uuid

    from relay_repl.agents.claude_code import evidence
    from relay_repl.store import jsonl

    msg_id = str(_uuid.uuid4())
    t = tmp_path / "transcript.jsonl"
    filler = [_json.dumps({"type": "assistant", "message": {"content": "x" * 50}}) for _ in range(400)]
    ours = _json.dumps({"type": "user", "origin": {"kind": "peer", "msg_id": msg_id, "verifiedPeerPid": 7},
                        "message": {"content": "hi"}})
    t.write_text("\n".join(filler + [ours]) + "\n")
    stepped = []
    real = jsonl.complete_lines

    def counting(path, offset=0):
        for at, raw in real(path, offset):
            stepped.append(at)
            yield at, raw

    monkeypatch.setattr(jsonl, "complete_lines", counting)
    hits = evidence.find_origin_records(t, msg_id)
    assert [h["origin"]["msg_id"] for h in hits] == [msg_id]
    assert len(stepped) <= 1
    with open(t, "a") as f:  # appended later: read from where the last poll stopped, found once
        f.write("\n".join(filler[:3]) + "\n")
    assert len(evidence.find_origin_records(t, msg_id)) == 1
