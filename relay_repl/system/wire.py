"""Unix-socket wire helpers: the one NDJSON framer and the kernel's peer credentials.

Why one module: the operator's inbox (which listens) and the Claude socket
transports (which write into a session's inbox) speak the same wire format,
Claude's newline-delimited JSON, and both trust only what the kernel says about
the other end (SO_PEERCRED). Two copies of either drifted before; the layers
above import these instead.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import AsyncIterator, Iterable
from typing import Any

from relay_repl.core import jsonrpc
from relay_repl.core.errors import TransportError


def encode_frames(frames: Iterable[dict[str, Any]]) -> bytes:
    """NDJSON: one compact JSON object per line, UTF-8, each ending in a newline
    (non-ASCII kept as is, exactly as Claude's own inbox writers do)."""
    return b"".join(jsonrpc.encode(f) for f in frames)


class LineTooLong(Exception):
    """A peer sent more than the limit without a newline (`read_lines`)."""


async def read_lines(sock: socket.socket, max_line: int) -> AsyncIterator[bytes]:
    """The newline-ended lines a connected, non-blocking unix socket sends, without the newline,
    until EOF (an unterminated tail is dropped); LineTooLong past `max_line` bytes without one.

    Why not anyio's UNIX stream `receive()`: on asyncio it registers `future.set_result` itself as
    the socket's reader callback, so a cancel that lands in the same loop turn as the peer's bytes
    (the inbox closing while a peer writes) has that callback raise InvalidStateError into the
    event loop's exception handler (anyio 4.16.0; a live test failed on it, issue 17).
    `anyio.wait_readable` guards its callback."""
    import anyio

    buf = b""
    while True:
        while (end := buf.find(b"\n")) < 0:
            if len(buf) >= max_line:
                raise LineTooLong(f"{len(buf)} bytes without a newline")
            await anyio.wait_readable(sock)
            try:
                chunk = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                return  # reset by the peer: as EOF
            if not chunk:
                return
            buf += chunk
        line, buf = buf[:end], buf[end + 1:]
        if end > max_line:
            raise LineTooLong(f"a line of {end} bytes")
        yield line


def peer_cred(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the connected peer, from the kernel (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def send_frames(path: str, frames: list[dict[str, Any]], timeout: float = 5.0) -> bytes:
    """Write NDJSON frames to a unix socket, half-close, read to EOF (blocking); returns what the
    other end wrote back (the operator's inbox answers an agent's request with one line).

    Errors become one-line TransportErrors that say what the socket's state means."""
    data = encode_frames(frames)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    got = b""
    try:
        s.connect(path)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while chunk := s.recv(4096):
            if len(got) < 65536:  # an answer is one short line: never hold more than that
                got += chunk
    except FileNotFoundError:
        raise TransportError(f"inbox socket {path} does not exist: is the relay REPL still running?") from None
    except ConnectionRefusedError:
        raise TransportError(f"inbox socket {path} refused the connection: its REPL is gone (stale socket)") from None
    except OSError as exc:
        raise TransportError(f"could not write to {path}: {exc}") from None
    finally:
        s.close()
    return got
