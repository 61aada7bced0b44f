"""Start-up: `relay` to its first prompt, against a bare `ptpython` on the same machine.

Both run on a real terminal (a private tmux server) and are timed from spawn
until the `>>>` prompt is on screen, polled every 5 ms. Reported as a ratio of
medians; the goal is <= 1.1x (issue 20). The two run in turn, so load from other
processes falls on both alike.

Beside the wall time, the CPU time the process had used when its prompt was seen (the
kernel's per-thread run time, /proc/PID/task/*/schedstat, summed): on a shared machine
(other work at load 2-5) the wall ratio swings by a tenth between two runs, while CPU time
counts only the work each start-up does.

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


def cpu_seconds(pid: int) -> float:
    """CPU time used so far by process `pid`, all its live threads (ns precision, unlike the
    10 ms ticks of /proc/PID/stat)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total / 1e9


def time_to_prompt(server: libtmux.Server, command: str, env: str, timeout: float = 30.0) -> tuple[float, float]:
    """Wall seconds from spawn to the prompt on screen, and the CPU seconds the process had
    used by then (the pane's process is the command itself: `env` execs it)."""
    name = uuid.uuid4().hex[:8]
    t0 = time.perf_counter()
    sess = server.new_session(session_name=name, x=160, y=40, window_command=f"env {env} {command}")
    pane = sess.active_window.active_pane
    pid = int(pane.pane_pid or 0)
    try:
        while time.perf_counter() - t0 < timeout:
            if any(line.startswith(">>>") for line in pane.capture_pane()):
                wall = time.perf_counter() - t0
                return wall, cpu_seconds(pid)
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
            cpu: dict[str, list[float]] = {k: [] for k in cmds}
            for _ in range(args.runs):
                for k, c in cmds.items():
                    wall, used = time_to_prompt(server, c, env)
                    samples[k].append(wall)
                    cpu[k].append(used)
        finally:
            server.kill()
    med = {k: statistics.median(v) for k, v in samples.items()}
    for k, v in samples.items():
        print(f"{k:<9} median {med[k] * 1000:7.1f} ms  (min {min(v) * 1000:.1f}, max {max(v) * 1000:.1f}, n={len(v)})")
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    for k, v in cpu.items():
        print(f"{k:<9} CPU to prompt median {cmed[k] * 1000:7.1f} ms  (mean {statistics.mean(v) * 1000:.1f})")
    ratio = med["relay"] / med["ptpython"]
    print(f"ratio relay/ptpython = {ratio:.2f}x  (goal <= 1.10x); CPU {cmed['relay'] / cmed['ptpython']:.2f}x")
    print(f"load average (1 min) {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
