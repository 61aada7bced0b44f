"""The Codex daemon's status API for a one-shot listing: the same JSON-RPC over WebSocket over its
UNIX control socket as daemon.py, spoken with the standard library, blocking, with no event loop.

Why a second client: `relay targets` and a cold `relay send codex:...` are one-shot listings run
loopless (system/loopless.py), and asking the daemon was the one step that still needed an event
loop: asyncio, anyio's backend and the `websockets` package (whose `version` module imports
importlib.metadata) cost ~0.1 s of a listing measured against a peer that lists in 0.1 s in all
(bench/oneliners.py). What discovery asks is read-only and small (`initialize`, `thread/loaded/list`,
`thread/read`), so the part of RFC 6455 it needs is small too: the opening handshake (checked:
status 101 and the accept key), masked text frames out, text and continuation frames in, a ping
answered, a close ended on. Everything else (the queue transport's `thread/queue/add`, the REPL's
refresh in its running loop) keeps the `websockets` client in daemon.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import struct
import time
from pathlib import Path
from typing import Any, NamedTuple

from relay_repl.core.errors import DaemonError, describe

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
_MAX_HEAD = 16_384


class SyncDaemonConnection:
    """An initialized connection (`initialize` answered, `initialized` sent): requests out, answers by id."""

    def __init__(self, sock: socket.socket, deadline: float, buffered: bytes = b"") -> None:
        self._sock = sock
        self._deadline = deadline
        self._buf = bytearray(buffered)
        self._next = 1

    # -- frames ------------------------------------------------------------------------------------
    def _send_frame(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)  # a client masks every frame (section 5.3)
        self._sock.sendall(head + mask + _masked(payload, mask))

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the daemon did not answer in time")
            self._sock.settimeout(left)
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _recv_message(self) -> str:
        """The next text message, its fragments joined; pings answered, pongs skipped."""
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            fin, opcode, masked, n = b0 & 0x80, b0 & 0x0F, b1 & 0x80, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            mask = self._read(4) if masked else b""
            payload = self._read(n)
            if mask:
                payload = _masked(payload, mask)
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode == 0x8:
                raise ConnectionError("the daemon closed the connection")
            if opcode not in (0x0, 0x1):
                raise ValueError(f"unexpected WebSocket opcode {opcode:#x} from the daemon")
            parts.append(payload)
            if fin:
                return b"".join(parts).decode("utf-8")

    # -- JSON-RPC ----------------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        self._send_frame(0x1, json.dumps(message).encode("utf-8"))

    def request(self, method: str, params: dict[str, Any]) -> int:
        """Send one request; its id (answers come through `collect`)."""
        n = self._next
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        return n

    def collect(self, ids: set[int]) -> dict[int, dict[str, Any]]:
        """The answers to `ids` (notifications and other ids are skipped)."""
        got: dict[int, dict[str, Any]] = {}
        while ids - set(got):
            msg = json.loads(self._recv_message())
            if isinstance(msg, dict) and msg.get("id") in ids:
                got[msg["id"]] = msg
        return got

    def close(self) -> None:
        try:
            self._send_frame(0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self._sock.close()


def _masked(data: bytes, mask: bytes) -> bytes:
    """`data` XOR the 4-byte `mask` repeated (masking and unmasking are the same operation)."""
    n = len(data)
    if not n:
        return b""
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(data, "big") ^ key).to_bytes(n, "big")


def _handshake(sock: socket.socket, deadline: float) -> bytes:
    """The opening handshake, checked; the bytes the daemon sent after its headers."""
    key = base64.b64encode(os.urandom(16))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the daemon did not answer the WebSocket handshake")
        sock.settimeout(left)
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the daemon closed the connection during the WebSocket handshake")
        data += chunk
        if len(data) > _MAX_HEAD:
            raise ValueError("the daemon's handshake answer is too long")
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if len(lines[0].split(" ")) < 2 or lines[0].split(" ")[1] != "101":
        raise ValueError(f"the daemon refused the WebSocket upgrade ({lines[0][:80]})")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    expected = base64.b64encode(hashlib.sha1(key + _GUID).digest()).decode()
    if headers.get("sec-websocket-accept") != expected:
        raise ValueError("the daemon's WebSocket accept key does not match")
    return rest


class DaemonStatus(NamedTuple):
    """What one connection to the daemon told: the loaded thread ids, the `thread/read` result per
    id, and who answered: its pid (the kernel's, SO_PEERCRED) and its version (its `initialize`
    answer's userAgent, `codex-tui/0.171.0 (...)`), each None when not known."""

    loaded: list[str]
    reads: dict[str, dict[str, Any]]
    pid: int | None
    version: str | None


_UA_VERSION = re.compile(r"[^/\s]+/(\d+\.\d+\.\d+)(?:[\s;(]|$)")


def agent_version(init: dict[str, Any]) -> str | None:
    """The daemon's own version from its `initialize` answer: the userAgent's first product token
    (`codex-tui/0.171.0 (Debian 12.0.0; x86_64) ...` -> 0.171.0), or None when it names none."""
    ua = (init.get("result") or {}).get("userAgent") if isinstance(init, dict) else None
    m = _UA_VERSION.match(ua) if isinstance(ua, str) else None
    return m.group(1) if m else None


def _peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process serving the other end of a UNIX socket (SO_PEERCRED), or None."""
    try:
        pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except (OSError, AttributeError, struct.error):
        return None
    return pid if pid > 0 else None


def daemon_thread_status_sync(socket_path: Path | str, thread_ids: list[str], timeout: float = 3.0,
                              client_name: str = "relay-repl") -> tuple[list[str], dict[str, dict[str, Any]]]:
    """What provider.daemon_thread_status answers, blocking: (loaded thread ids, thread/read result
    per id), in one connection; DaemonError with a one-line reason (no answer within `timeout` too)."""
    status = daemon_status_sync(socket_path, thread_ids, timeout, client_name)
    return status.loaded, status.reads


def daemon_status_sync(socket_path: Path | str, thread_ids: list[str], timeout: float = 3.0,
                       client_name: str = "relay-repl") -> DaemonStatus:
    """`daemon_thread_status_sync`'s answer and who gave it (`DaemonStatus`): a listing takes a
    daemon-held thread's client version from the daemon itself instead of running the 300 MB
    binary's `--version` (issue 40: ~35 ms before a Codex send's plan)."""
    deadline = time.monotonic() + timeout
    # the control socket is a symlink into /tmp/codex-daemon-<uid>/ (sun_path holds 108 bytes)
    target = os.path.realpath(socket_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn: SyncDaemonConnection | None = None
    try:
        sock.settimeout(timeout)
        sock.connect(target)
        conn = SyncDaemonConnection(sock, deadline, _handshake(sock, deadline))
        conn.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "clientInfo": {"name": client_name, "title": "relay_repl discovery", "version": "0.1"},
            "capabilities": {"experimentalApi": True}}})
        init = conn.collect({0})[0]
        if "error" in init:
            raise DaemonError(f"initialize refused: {init['error'].get('message', init['error'])}")
        conn.send({"jsonrpc": "2.0", "method": "initialized"})
        listed = conn.request("thread/loaded/list", {})
        ids = {tid: conn.request("thread/read", {"threadId": tid, "includeTurns": False}) for tid in thread_ids}
        answers = conn.collect({listed, *ids.values()})
        pid = _peer_pid(sock)
    except TimeoutError as exc:
        raise DaemonError(f"no answer within {timeout:g}s") from exc
    except DaemonError:
        raise
    except (OSError, ValueError, struct.error) as exc:
        raise DaemonError(describe(exc, "asking the Codex daemon")) from exc
    finally:
        if conn is not None:
            conn.close()
        else:
            sock.close()
    loaded, reads = status_from(answers, listed, ids)
    return DaemonStatus(loaded, reads, pid, agent_version(init))


def status_from(answers: dict[int, dict[str, Any]], listed: int,
                ids: dict[str, int]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(loaded thread ids, thread/read result per id) from the answers to `thread/loaded/list` (id
    `listed`) and to each `thread/read` (`ids`: thread id -> request id); both clients read them so."""
    loaded = [x for x in (answers[listed].get("result") or {}).get("data", []) if isinstance(x, str)]
    reads: dict[str, dict[str, Any]] = {}
    for tid, n in ids.items():
        res = answers[n].get("result")
        if isinstance(res, dict) and isinstance(res.get("thread"), dict):
            reads[tid] = res["thread"]
    return loaded, reads
