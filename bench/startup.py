"""Start-up: `relay` to its first prompt, against a bare `ptpython` on the same machine.

Both run on a real terminal (a private tmux server) and are timed from spawn
until the `>>>` prompt is on screen, polled every 5 ms. Reported as a ratio of
medians; the goal is <= 1.1x (issue 20). The two run in turn, so load from other
processes falls on both alike.

    .venv/bin/python -m bench.startup [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid

import libtmux


def time_to_prompt(server: libtmux.Server, command: str, env: str, timeout: float = 30.0) -> float:
    name = uuid.uuid4().hex[:8]
    t0 = time.perf_counter()
    sess = server.new_session(session_name=name, x=160, y=40, window_command=f"env {env} {command}")
    pane = sess.active_window.active_pane
    try:
        while time.perf_counter() - t0 < timeout:
            if any(line.startswith(">>>") for line in pane.capture_pane()):
                return time.perf_counter() - t0
            time.sleep(0.005)
        raise RuntimeError(f"no prompt from {command!r} within {timeout}s")
    finally:
        sess.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    bindir = os.path.dirname(sys.executable)
    from bench.bytecode import ensure_bytecode

    print(ensure_bytecode())
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as home:
        env = f"HOME={home} RELAY_HOME={home}/relay TERM=xterm-256color LANG=C.UTF-8 PATH={bindir}:/usr/bin:/bin"
        server = libtmux.Server(socket_name=f"relay-bench-{uuid.uuid4().hex[:6]}")
        server.new_session(session_name="keep", x=80, y=20)
        try:
            cmds = {"ptpython": f"{bindir}/ptpython", "relay": f"{bindir}/relay"}
            for c in cmds.values():  # warm the page cache once each
                time_to_prompt(server, c, env)
            samples: dict[str, list[float]] = {k: [] for k in cmds}
            for _ in range(args.runs):
                for k, c in cmds.items():
                    samples[k].append(time_to_prompt(server, c, env))
        finally:
            server.kill()
    med = {k: statistics.median(v) for k, v in samples.items()}
    for k, v in samples.items():
        print(f"{k:<9} median {med[k] * 1000:7.1f} ms  (min {min(v) * 1000:.1f}, max {max(v) * 1000:.1f}, n={len(v)})")
    ratio = med["relay"] / med["ptpython"]
    print(f"ratio relay/ptpython = {ratio:.2f}x  (goal <= 1.10x)")
    print(f"load average (1 min) {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
