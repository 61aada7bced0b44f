"""read_lines over a real socket pair: lines split across reads, a tail without a newline, the limit."""

from __future__ import annotations

import socket

import anyio
import pytest

from relay_repl.system.wire import LineTooLong, read_lines

pytestmark = pytest.mark.anyio


async def _lines(chunks: list[bytes], max_line: int = 64) -> list[bytes]:
    a, b = socket.socketpair(socket.AF_UNIX)
    a.setblocking(False)
    got: list[bytes] = []
    try:
        async with anyio.create_task_group() as tg:
            async def read() -> None:
                async for line in read_lines(a, max_line):
                    got.append(line)

            tg.start_soon(read)
            for chunk in chunks:
                b.sendall(chunk)
                await anyio.sleep(0.01)  # separate reads on the other end (each chunk is still read whole)
            b.shutdown(socket.SHUT_WR)
    finally:
        a.close()
        b.close()
    return got


async def test_lines_split_across_reads_come_whole_and_a_tail_without_newline_is_dropped():
    assert await _lines([b'{"a":', b'1}\n{"b":2}\n{"c"', b':3}\n', b"no newline"]) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


async def test_an_empty_stream_has_no_lines():
    assert await _lines([]) == []


async def test_more_than_the_limit_without_a_newline_is_refused():
    with pytest.raises(BaseExceptionGroup) as info:
        await _lines([b"x" * 100], max_line=64)
    assert info.group_contains(LineTooLong)
    assert await _lines([b"y" * 64 + b"\n"], max_line=64) == [b"y" * 64]
