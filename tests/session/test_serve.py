"""`relay serve --stdio` as a real subprocess: one JSON answer per JSON line, versioned."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from relay_repl import __version__
from relay_repl.core.serve_wire import PROTOCOL_VERSION


def serve(*lines: str) -> list[dict]:
    res = subprocess.run([sys.executable, "-m", "relay_repl", "serve", "--stdio"], input="".join(lines),
                         capture_output=True, text=True, timeout=60, env=os.environ)
    assert res.returncode == 0, res.stderr
    return [json.loads(ln) for ln in res.stdout.splitlines()]


def req(i: int, op: str, v: int = PROTOCOL_VERSION, **args) -> str:
    return json.dumps({"v": v, "id": i, "op": op, "args": args}) + "\n"


def test_hello_then_targets_in_order(monkeypatch, tmp_path):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "none2"))
    a, b = serve(req(1, "hello", protocol=PROTOCOL_VERSION), req(2, "targets"))
    assert a["ok"] and a["id"] == 1 and a["result"]["relay"] == __version__ and a["result"]["protocol"] == PROTOCOL_VERSION
    assert a["result"]["pid"] > 0
    assert b["ok"] and b["id"] == 2 and isinstance(b["result"], list)


def test_version_mismatch_names_both_versions():
    (ans,) = serve(req(7, "hello", v=PROTOCOL_VERSION + 1, protocol=PROTOCOL_VERSION + 1))
    assert not ans["ok"] and ans["error_kind"] == "ProtocolMismatch" and ans["id"] == 7
    assert f"version {PROTOCOL_VERSION}," in ans["error"] and f"version {PROTOCOL_VERSION + 1}" in ans["error"]
    (ans,) = serve(req(1, "hello", protocol=99))  # the line's version is right, the hello's is not
    assert not ans["ok"] and "99" in ans["error"] and f"version {PROTOCOL_VERSION}" in ans["error"]


def test_garbage_and_unknown_ops_answered_not_crashed():
    a, b, c = serve("not json\n", req(3, "rm-rf"), req(4, "hello", protocol=PROTOCOL_VERSION))
    assert not a["ok"] and a["error"] == "not a JSON line"
    assert not b["ok"] and "unknown op" in b["error"]
    assert c["ok"]


def test_refuses_a_terminal():
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-m", "relay_repl", "serve", "--stdio"])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 2 and b"not for a terminal" in out
