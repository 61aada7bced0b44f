"""One subprocess run whose captured output is bounded: for a process whose other end is a peer.

Why not `subprocess.run(capture_output=True)`: it keeps everything the process writes, so a host
that answers one call with gigabytes (a compromised or buggy `relay serve` at the far end of ssh)
is read whole into memory. Here each stream keeps at most `limit` bytes; a process that writes
more is killed and the run says it was cut. Input and both outputs are pumped together (a
selector), so a process that writes before it has read all its input never deadlocks the run.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CappedRun:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    cut: bool  # a stream went over the limit: the process was killed and its output is partial


def run_capped(argv: Sequence[str], stdin: bytes, *, timeout: float, limit: int) -> CappedRun:
    """`argv` fed `stdin`, its output kept to `limit` bytes a stream; subprocess.TimeoutExpired
    (the process killed) when it has not finished within `timeout` seconds. OSError if it cannot start."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    kept = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    pending = memoryview(stdin)
    cut = False
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as sel:
            for f in (proc.stdin, proc.stdout, proc.stderr):
                os.set_blocking(f.fileno(), False)
            if pending:
                sel.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
            sel.register(proc.stdout, selectors.EVENT_READ)
            sel.register(proc.stderr, selectors.EVENT_READ)
            while sel.get_map() and not cut:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(list(argv), timeout)
                for key, _ in sel.select(left):
                    if key.fileobj is proc.stdin:
                        try:
                            pending = pending[os.write(key.fd, pending[:65536]):]
                        except BrokenPipeError:  # it stopped reading: what it says is the answer
                            pending = pending[:0]
                        if not pending:
                            sel.unregister(proc.stdin)
                            proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buf = kept[key.fd]
                    room = limit - len(buf)
                    buf += chunk[:room]
                    cut = cut or len(chunk) > room
        if cut:
            proc.kill()
        code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        for f in (proc.stdin, proc.stdout, proc.stderr):
            f.close()
    return CappedRun(code, bytes(out), bytes(err), cut)
