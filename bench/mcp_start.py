"""`relay mcp` start-up: spawn to the `initialize` answer, wall and CPU, and the first tool call.

Why it matters (issue 17): every agent configured with the relay MCP server starts one at its own
start and waits for `initialize` under a deadline (Codex: 10 s by default); on a busy machine a
slow server leaves the agent without its relay_reply tool. Targets on a quiet machine: under
150 ms wall and 0.15 CPU-s to the `initialize` answer. CPU is the child's own (wait4), start to
exit, with nothing but initialize and tools/list asked (with --call: one relay_requests call too,
which loads the tools' module).

    .venv/bin/python -m bench.mcp_start [--runs 5] [--relay PATH] [--call]

`--relay` compares another installation (e.g. one still on the MCP SDK). Say the load beside
any figure you keep; it is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


def one_run(relay: str, home: str, call: bool) -> dict[str, float]:
    """One server's life: initialize, tools/list (and a tool call), then end of input."""
    t0 = time.perf_counter()
    p = subprocess.Popen([relay, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env={**os.environ, "RELAY_HOME": home})
    stdin, stdout = p.stdin, p.stdout
    assert stdin is not None and stdout is not None

    def ask(msg: dict) -> dict:
        stdin.write(json.dumps(msg).encode() + b"\n")
        stdin.flush()
        return json.loads(stdout.readline())

    out: dict[str, float] = {}
    assert "result" in ask(INIT)
    out["initialize_s"] = time.perf_counter() - t0
    stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    t1 = time.perf_counter()
    assert "result" in ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    out["tools_list_s"] = time.perf_counter() - t1
    if call:
        t2 = time.perf_counter()
        assert "result" in ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                "params": {"name": "relay_requests", "arguments": {}}})
        out["first_call_s"] = time.perf_counter() - t2
    stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    out["cpu_s"] = ru.ru_utime + ru.ru_stime
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--relay", default=os.path.join(os.path.dirname(sys.executable), "relay"))
    ap.add_argument("--call", action="store_true", help="also time the first tools/call (relay_requests)")
    args = ap.parse_args()
    from bench.bytecode import ensure_bytecode

    print(ensure_bytecode())
    print(f"relay: {args.relay}; load before {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as home:
        one_run(args.relay, home, args.call)  # warm the page cache
        runs = [one_run(args.relay, home, args.call) for _ in range(args.runs)]
    for key in runs[0]:
        vals = [r[key] for r in runs]
        print(f"  {key:13} median {statistics.median(vals):.3f}  max {max(vals):.3f}  ({', '.join(f'{v:.3f}' for v in vals)})")
    med = statistics.median(r["initialize_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    if args.call:  # the CPU figure includes the tool call: no initialize target to judge
        print(f"load after {os.getloadavg()[0]:.2f}")
        return
    ok = med < 0.150 and cpu < 0.150
    print(f"target (quiet machine): initialize < 0.150 s wall and < 0.150 CPU-s: {'met' if ok else 'NOT met'}; "
          f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
