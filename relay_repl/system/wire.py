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
from collections.abc import Iterable
from typing import Any

from relay_repl.core import jsonrpc
from relay_repl.core.errors import TransportError


def encode_frames(frames: Iterable[dict[str, Any]]) -> bytes:
    """NDJSON: one compact JSON object per line, UTF-8, each ending in a newline
    (non-ASCII kept as is, exactly as Claude's own inbox writers do)."""
    return b"".join(jsonrpc.encode(f) for f in frames)


def peer_cred(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the connected peer, from the kernel (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def send_frames(path: str, frames: list[dict[str, Any]], timeout: float = 5.0) -> None:
    """Write NDJSON frames to a unix socket, half-close, read to EOF (blocking).

    Errors become one-line TransportErrors that say what the socket's state means."""
    data = encode_frames(frames)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
    except FileNotFoundError:
        raise TransportError(f"inbox socket {path} does not exist: is the relay REPL still running?") from None
    except ConnectionRefusedError:
        raise TransportError(f"inbox socket {path} refused the connection: its REPL is gone (stale socket)") from None
    except OSError as exc:
        raise TransportError(f"could not write to {path}: {exc}") from None
    finally:
        s.close()
