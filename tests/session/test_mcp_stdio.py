"""`relay mcp` on real pipes while a tool call is slow or noisy: the two things an MCP client relies on
that the method-by-method tests (test_mcp_protocol.py) do not show.

1. A `ping` (or any other request) that arrives while a `tools/call` is still running is answered at
   once, not after the call: Claude Code and Codex ping their servers and drop one that stays silent.
   The slow call here is the real `relay_reply` path: its inbox (a socket this test holds) has taken
   the reply frame and not yet closed, so the tool's `send_frames` waits on it.
2. Whatever a tool body, a library it calls or a child process it starts writes to stdout (print,
   a write on fd 1, a child's echo) never reaches the protocol stream, and a child that reads stdin
   does not eat the client's requests: every line the client reads is one JSON-RPC answer.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import sys
import textwrap
import time

from relay_repl.session.core.inbox import InboxRecord, inbox_dir
from relay_repl.core.mcp_names import MCP_TOOL
from relay_repl.session.mcp.mcp_server import REQUESTS_TOOL
from relay_repl.store.ledger import Ledger
from relay_repl.system.proc import proc_start
from tests.support.mcp_pipe import WAIT, McpPipe, init_params
from tests.session.test_mcp_server import sent


def hold_inbox() -> socket.socket:
    """A live inbox record (this process) whose socket this test answers itself, when it chooses."""
    path = inbox_dir() / f"{os.getpid()}.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)
    srv.settimeout(WAIT)
    rec = InboxRecord(pid=os.getpid(), proc_start=proc_start(os.getpid()) or "", address="op",
                      sender="operator:relay@op", socket=str(path), started=time.time())
    (inbox_dir() / f"{os.getpid()}.json").write_text(rec.model_dump_json())
    return srv


def read_frames(conn: socket.socket) -> bytes:
    """Everything the tool wrote, up to its half-close: after this it waits on us for EOF."""
    conn.settimeout(WAIT)
    data = b""
    while chunk := conn.recv(4096):
        data += chunk
    return data


def answers_while_holding(mcp: McpPipe, conn: socket.socket, n: int) -> list[dict]:
    """The next `n` answer lines, while the held inbox stays open: a byte every second keeps the tool's
    read (5 s timeout per recv, system/wire.send_frames) from giving up however slow the machine is."""
    deadline = time.monotonic() + WAIT
    out: list[dict] = []
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {out} answered while a tool call ran"
        try:
            line = mcp.lines.get(timeout=1.0)
        except queue.Empty:
            conn.sendall(b"\n")
            continue
        assert line, f"relay mcp closed its stdout; stderr: {mcp.stderr_text()}"
        out.append(json.loads(line))
    return out


def test_ping_and_other_requests_are_answered_while_a_tool_call_waits(relay_home):
    led = Ledger.default()
    sent(led, "op-1", "reply")
    srv = hold_inbox()
    mcp = McpPipe()
    try:
        assert "result" in mcp.ask(1, "initialize", init_params())
        mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        mcp.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                  "params": {"name": MCP_TOOL, "arguments": {"relay_id": "op-1", "text": "done"}}})
        conn, _ = srv.accept()
        with conn:
            frames = read_frames(conn)  # the reply is written; the call now waits for our EOF
            assert b"re=op-1" in frames and b"done" in frames
            mcp.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            mcp.send({"jsonrpc": "2.0", "id": "l", "method": "tools/list"})
            mcp.send({"jsonrpc": "2.0", "id": "other", "method": "tools/call",
                      "params": {"name": MCP_TOOL, "arguments": {"relay_id": "op-99", "text": "x"}}})
            early = answers_while_holding(mcp, conn, 3)
            # all three answered while the first call is still running (its inbox has not closed)
            assert sorted(m["id"] for m in early) == ["l", "other", "p"]
            by_id = {m["id"]: m for m in early}
            assert by_id["p"]["result"] == {}
            assert [t["name"] for t in by_id["l"]["result"]["tools"]][:2] == [MCP_TOOL, REQUESTS_TOOL]
            assert by_id["other"]["result"]["isError"] is True  # a second tool call, refused: op-99 was never sent
        # the inbox closed: the slow call finishes and is answered last
        slow = mcp.recv()
        assert slow["id"] == "slow" and slow["result"]["isError"] is False, slow
        assert json.loads(slow["result"]["content"][0]["text"])["replied_to"] == "op-1"
    finally:
        srv.close()
        assert mcp.close() == 0


# A small entry that is `relay mcp` with relay_requests replaced by a noisy body: it prints through
# sys.stdout (with and without a newline), writes fd 1 at C level, and starts a child that echoes to
# its stdout and reads its stdin (`cat`), as a tool's library or subprocess might.
NOISY_SERVER = textwrap.dedent("""
    import os, subprocess, sys
    from relay_repl.session.mcp import mcp_server, mcp_tools

    def noisy():
        print("stray print from a tool")
        sys.stdout.write("half a line, no newline")
        sys.stdout.flush()
        os.write(1, b"C-level write on fd 1\\n")
        subprocess.run(["sh", "-c", "echo child on stdout; cat"], check=True)
        return "quiet answer"

    mcp_tools.relay_requests = noisy
    sys.exit(mcp_server.serve())
""")


def test_stray_stdout_of_a_tool_and_its_children_never_reaches_the_protocol(relay_home):
    mcp = McpPipe(argv=[sys.executable, "-c", NOISY_SERVER])
    try:
        assert "result" in mcp.ask(1, "initialize", init_params())
        for i in (2, 3):  # twice: the first call also loads the tools (pydantic, the ledger)
            got = mcp.ask(i, "tools/call", {"name": REQUESTS_TOOL, "arguments": {}})
            assert got["jsonrpc"] == "2.0" and got["id"] == i
            assert got["result"] == {"content": [{"type": "text", "text": "quiet answer"}], "isError": False}
        # `cat` read /dev/null, not our pipe: the next request still reaches the server
        assert mcp.ask(4, "ping") == {"jsonrpc": "2.0", "id": 4, "result": {}}
    finally:
        assert mcp.close() == 0
    # recv() already parsed each answer line as one JSON object; nothing else came on stdout
    assert mcp.lines.get(timeout=WAIT) == b""
    err = mcp.stderr_text()
    for stray in ("stray print from a tool", "half a line, no newline", "C-level write on fd 1", "child on stdout"):
        assert err.count(stray) == 2, err  # it was written (to stderr, where a client logs it)

