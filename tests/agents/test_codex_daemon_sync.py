"""The standard-library client of the Codex daemon's status API (agents/codex/daemon_sync.py), against
a real `websockets` server on a real UNIX socket: what the library client (daemon.py) reads, it reads,
through the frames a server may send (fragments, pings, 16- and 64-bit lengths, notifications
between answers), and every failure is one DaemonError line within its timeout."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.server import unix_serve

from relay_repl.agents.codex.daemon_sync import agent_version, daemon_status_sync, daemon_thread_status_sync
from relay_repl.agents.codex.provider import daemon_thread_status
from relay_repl.core.errors import DaemonError

pytestmark = pytest.mark.anyio

BIG = "x" * 70_000  # past 65535 bytes: the 64-bit length form


async def handler(ws) -> None:
    async for raw in ws:
        msg = json.loads(raw)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue
        pong = await ws.ping()  # a random payload each time: the client must answer it with a pong
        with anyio.fail_after(2):
            await pong  # no pong, no answer: the client times out and the test fails
        await ws.send(json.dumps({"method": "thread/status/changed", "params": {"pad": "y" * 300}}))  # 16-bit length
        if method == "initialize":
            result: dict = {"userAgent": "fake/0.171.0"}
        elif method == "thread/loaded/list":
            result = {"data": ["t-1", "t-2", 7], "nextCursor": None}
        elif method == "thread/read":
            tid = msg["params"]["threadId"]
            if tid == "t-missing":
                await ws.send(json.dumps({"id": mid, "error": {"code": -32603, "message": "no thread"}}))
                continue
            result = {"thread": {"id": tid, "status": {"type": "idle"}, "preview": BIG if tid == "t-2" else ""}}
        else:
            continue
        text = json.dumps({"id": mid, "result": result})
        if method == "thread/read":  # fragmented: a text frame and continuation frames
            await ws.send([text[:10], text[10:5000], text[5000:]])
        else:
            await ws.send(text)


@pytest.fixture
async def served():
    short = Path(tempfile.mkdtemp(prefix="cxs-", dir="/tmp"))
    target = short / "s.sock"
    server = await unix_serve(handler, str(target), max_size=None)
    link = short / "link.sock"
    link.symlink_to(target)  # the control socket is a symlink, as Codex makes it
    yield link
    server.close()
    await server.wait_closed()
    for p in (link, target):
        p.unlink(missing_ok=True)
    short.rmdir()


async def test_it_reads_what_the_library_client_reads(served):
    ids = ["t-1", "t-2", "t-missing"]
    want = await daemon_thread_status(served, ids)
    got = await anyio.to_thread.run_sync(daemon_thread_status_sync, served, ids)
    assert got == want
    loaded, reads = got
    assert loaded == ["t-1", "t-2"] and set(reads) == {"t-1", "t-2"}
    assert reads["t-2"]["preview"] == BIG


async def test_it_says_who_answered_the_daemons_pid_and_version(served):
    """issue 40: the answering process's pid (SO_PEERCRED: this test serves it) and its own version
    (initialize's userAgent), which a listing uses instead of running the holder's `--version`."""
    got = await anyio.to_thread.run_sync(daemon_status_sync, served, ["t-1"])
    assert (got.pid, got.version) == (os.getpid(), "0.171.0")
    assert (got.loaded, got.reads) == await anyio.to_thread.run_sync(daemon_thread_status_sync, served, ["t-1"])


def test_the_version_is_the_user_agents_first_product_only():
    ua = {"result": {"userAgent": "codex-tui/0.171.0 (Debian 12.0.0; x86_64) tmux-256color (relay-repl; 0.1)"}}
    assert agent_version(ua) == "0.171.0"
    assert agent_version({"result": {"userAgent": "relay-probe/0.169.0"}}) == "0.169.0"
    for bad in ({"result": {"userAgent": "codex-tui (relay-repl; 0.1.2)"}}, {"result": {"userAgent": 7}}, {"result": {}},
                {"error": {}}, {"result": {"userAgent": "codex-tui/0.171 (x)"}}):
        assert agent_version(bad) is None, bad


def test_a_refused_upgrade_is_one_line(tmp_path):
    path = tmp_path / "http.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen()

    def answer() -> None:
        conn, _ = srv.accept()
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.close()

    th = threading.Thread(target=answer)
    th.start()
    with pytest.raises(DaemonError) as exc:
        daemon_thread_status_sync(path, ["t-1"], timeout=2.0)
    th.join()
    srv.close()
    assert "refused the WebSocket upgrade" in str(exc.value) and "\n" not in str(exc.value)


def test_a_silent_daemon_times_out_as_said(tmp_path):
    path = tmp_path / "mute.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen()  # accepts (the kernel does) and never answers
    t0 = time.monotonic()
    with pytest.raises(DaemonError, match=r"no answer within 0.3s"):
        daemon_thread_status_sync(path, ["t-1"], timeout=0.3)
    assert time.monotonic() - t0 < 2.0
    srv.close()


def test_no_daemon_is_one_line(tmp_path):
    with pytest.raises(DaemonError) as exc:
        daemon_thread_status_sync(tmp_path / "absent.sock", [], timeout=1.0)
    assert "asking the Codex daemon" in str(exc.value) and "\n" not in str(exc.value)
    assert not os.path.exists(tmp_path / "absent.sock")
