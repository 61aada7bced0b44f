"""A JSON-RPC 2.0 server on this process's stdin/stdout, one message per line (MCP's stdio transport).

Why threads and not an event loop: anyio/asyncio cost import time that `relay mcp` cannot spend
before its first answer (session/mcp/mcp_server.py), and the only slow methods are tool calls, which
block on files and sockets anyway. Methods named in `slow` run on their own thread so a `ping` or
a second call is answered while one is in flight; the rest are answered in order on the reading
thread. One lock keeps each answer a whole line. At end of input the server waits for the calls
still running, so every request that arrived gets its answer before the process exits.

Why the protocol gets private copies of fd 0 and 1: anything else that writes stdout (a stray
print, a child process a tool starts) would corrupt the message stream, and a child that reads
stdin would steal the client's requests; once serving, fd 1 is stderr and fd 0 is /dev/null for
everyone but the protocol.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, BinaryIO

from relay_repl.core import jsonrpc
from relay_repl.core.errors import JsonRpcError

Handler = Callable[[Any], Any]


class StdioRpcServer:
    """Dispatch each request line to `handlers[method](params)`; its return value is the result."""

    def __init__(self, handlers: Mapping[str, Handler], slow: Collection[str] = (),
                 reader: BinaryIO | None = None, writer: BinaryIO | None = None,
                 answered: Callable[[str], None] | None = None) -> None:
        self.handlers = handlers
        self.slow = frozenset(slow)
        self.answered = answered  # called with the method once its result has been written and flushed
        self._reader = reader
        self._writer = writer
        self._lock = threading.Lock()
        self._running: list[threading.Thread] = []

    def serve(self) -> int:
        """Answer until end of input; 0 when the client closed the stream."""
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            reader, writer = _claim_stdio()
        self._writer = writer
        try:
            for line in bounded_lines(reader, jsonrpc.MAX_LINE):
                self.handle_line(line)
        finally:
            for t in self._running:
                t.join()
        return 0

    def handle_line(self, line: bytes) -> None:
        got = jsonrpc.decode(line)
        if got is None:
            return
        if isinstance(got, dict):
            self._send(got)
            return
        if got.is_notification:
            return  # notifications/initialized, notifications/cancelled, anything unknown: no answer is allowed
        if got.method in self.slow and got.method in self.handlers:
            t = threading.Thread(target=self._answer, args=(got,), name=f"rpc-{got.id}", daemon=True)
            self._running = [r for r in self._running if r.is_alive()] + [t]
            t.start()
        else:
            self._answer(got)

    def _answer(self, req: jsonrpc.Request) -> None:
        handler = self.handlers.get(req.method)
        if handler is None:
            self._send(jsonrpc.error_response(req.id, jsonrpc.METHOD_NOT_FOUND, "Method not found", req.method))
            return
        try:
            reply = jsonrpc.result_response(req.id, handler(req.params))
        except JsonRpcError as exc:
            reply = jsonrpc.from_error(req.id, exc)
        except Exception as exc:  # a bug of ours: the client gets an answer, stderr the detail
            print(f"relay: {req.method} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            reply = jsonrpc.error_response(req.id, jsonrpc.INTERNAL_ERROR, f"Internal error: {exc}")
        if self._send(reply) and self.answered is not None and "result" in reply:
            self.answered(req.method)

    def _send(self, msg: dict[str, Any]) -> bool:
        """Write one message; False when the client is gone."""
        data = jsonrpc.encode(msg)
        assert self._writer is not None
        with self._lock:
            try:
                self._writer.write(data)
                self._writer.flush()
            except (BrokenPipeError, ValueError):
                return False  # the client is gone; end of input follows
        return True


def bounded_lines(reader: BinaryIO, limit: int) -> Iterator[bytes]:
    """Each line of `reader`, none held longer than `limit` + 1 bytes: the head of a longer line
    stands for it (its length is what decode refuses) and the rest, up to its newline, is read
    and dropped in pieces. A 10 MB line costs a bounded buffer, not 10 MB, and the next line
    is read as usual."""
    while True:
        line = reader.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := reader.readline(limit)) and not rest.endswith(b"\n"):
                pass
        yield line


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Private copies of fd 0 and 1 for the protocol; fd 0 becomes /dev/null, fd 1 stderr."""
    sys.stdout.flush()
    reader = os.fdopen(os.dup(0), "rb")  # buffered: readline returns as soon as a newline arrives
    writer = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr either: stray output goes nowhere
        out = os.open(os.devnull, os.O_WRONLY)
        os.dup2(out, 1)
        os.close(out)
    return reader, writer
