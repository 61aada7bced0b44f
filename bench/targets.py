"""Discovery cost: `relay targets --json` on 50 Claude records and 50 Codex threads,
against `claude agents --json` alone on the same records.

    .venv/bin/python -m bench.targets [--runs 10]

Fixture (real files, real processes): 25 live Claude records (pids of running
`sleep` processes with their real procStart) and 25 stale ones (dead pids);
50 Codex threads with names and rollouts, 25 of whose locks are really flocked
by a helper process. Both commands run in turn, each `--runs` times. Reported as ratios of medians to the anchor:
- cold: a fresh `relay targets --json` process (goal <= 1.2x);
- warm: `await session.refresh()` inside one long-lived process, as in the REPL (goal <= 0.25x).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HOLDER = """
import fcntl, sys, time
fs = [open(p, 'a') for p in sys.argv[1:]]
for f in fs: fcntl.flock(f, fcntl.LOCK_EX)
print('held', flush=True)
time.sleep(3600)
"""


def proc_start(pid: int) -> str:
    st = Path(f"/proc/{pid}/stat").read_text()
    return st[st.rfind(")") + 2:].split(" ")[19]


def build(root: Path) -> tuple[dict[str, str], list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    cfg = root / "claude"
    (cfg / "sessions").mkdir(parents=True)
    now = int(time.time() * 1000)
    for i in range(50):
        if i < 25:
            p = subprocess.Popen(["sleep", "3600"])
            procs.append(p)
            pid, start = p.pid, proc_start(p.pid)
        else:
            pid, start = 3_900_000 + i, "12345"
        rec = {"pid": pid, "sessionId": str(uuid.uuid4()), "cwd": f"/work/p{i}", "startedAt": now, "procStart": start,
               "version": "2.1.328", "peerProtocol": 1, "kind": "interactive", "entrypoint": "cli",
               "messagingSocketPath": f"{root}/socks/{pid}.sock", "name": f"s{i:02d}", "nameSource": "user",
               "status": "idle", "updatedAt": now}
        (cfg / "sessions" / f"{pid}.json").write_text(json.dumps(rec))
    home = root / "codex"
    (home / "thread-writer-locks").mkdir(parents=True)
    day = home / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    locks = []
    with open(home / "session_index.jsonl", "w") as idx:
        for i in range(50):
            tid = str(uuid.uuid4())
            idx.write(json.dumps({"id": tid, "thread_name": f"t{i:02d}", "updated_at": "2026-11-30T10:00:00Z"}) + "\n")
            (day / f"rollout-2026-11-30T10-00-00-{tid}.jsonl").write_text(
                json.dumps({"type": "session_meta", "payload": {"id": tid, "cwd": "/w"}}) + "\n")
            lock = home / "thread-writer-locks" / f"{tid}.lock"
            lock.touch()
            if i < 25:
                locks.append(str(lock))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, *locks], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    procs.append(holder)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(cfg), "CODEX_HOME": str(home), "RELAY_HOME": str(root / "relay"),
           "TMUX": "", "RELAY_TMUX_SOCKET": f"relay-bench-none-{os.getpid()}"}
    return env, procs


def timed(cmds: dict[str, list[str]], env: dict[str, str], runs: int) -> tuple[dict[str, float], dict[str, str], dict[str, float]]:
    """Median wall time per command, the commands run in turn (a, b, a, b, ...): other
    processes on a shared machine then load both alike, rather than whichever ran while
    they were busy. Also the median CPU time (user + sys) of each, its own children included
    (relay's cold listing runs `claude agents --json` itself and waits for it): at load 2-5 the
    wall ratio swings with whoever else runs, the CPU ratio counts only the work."""
    out: dict[str, str] = {}
    samples: dict[str, list[float]] = {k: [] for k in cmds}
    cpu: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(runs):
        for k, cmd in cmds.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            cp = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            samples[k].append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[k].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
            out[k] = cp.stdout
    return ({k: statistics.median(v) for k, v in samples.items()}, out,
            {k: statistics.median(v) for k, v in cpu.items()})


def warm(env: dict[str, str], runs: int) -> tuple[float, int]:
    os.environ.update(env)
    import anyio

    from relay_repl.session.app import make_session

    async def go() -> tuple[float, int]:
        s = make_session(echo=None)
        await s.refresh()
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            found = await s.refresh()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples), sum(t.live for t in found)

    return anyio.run(go)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--relay", help="the `relay` executable timed cold (default: this virtualenv's, an editable install); "
                    "e.g. one installed from the wheel, which users run: no editable finder imported by `site` "
                    "(pathlib, re, importlib.util, ~20 ms) before relay's first line")
    args = ap.parse_args()
    from bench.bytecode import ensure_bytecode
    from relay_repl.lab.install import bin_dir

    claude = str(bin_dir() / "claude")
    with tempfile.TemporaryDirectory(prefix="relay-bench-targets-") as tmp:
        env, procs = build(Path(tmp))
        env["PATH"] = f"{bin_dir()}:{env['PATH']}"
        try:
            print(ensure_bytecode())
            load = os.getloadavg()
            med, outs, cpu = timed({"anchor": [claude, "agents", "--json"],
                               "cold": [args.relay or str(Path(sys.executable).parent / "relay"), "targets", "--json"]},
                              env, args.runs)
            anchor, cold, listing, out = med["anchor"], med["cold"], outs["anchor"], outs["cold"]
            w, live = warm(env, args.runs * 3)
            load_after = os.getloadavg()
        finally:
            for p in procs:
                p.kill()
    targets = json.loads(out)
    n_live = sum(t["live"] for t in targets)
    print(f"fixture: 50 Claude records ({len(json.loads(listing))} listed live), 50 Codex threads; "
          f"relay found {len(targets)} targets, {n_live} live (warm: {live})")
    print(f"anchor  claude agents --json      median {anchor * 1000:7.1f} ms")
    print(f"cold    relay targets --json      median {cold * 1000:7.1f} ms  = {cold / anchor:.2f}x  (goal <= 1.2x)"
          + (f"  [{args.relay}]" if args.relay else ""))
    print(f"CPU     anchor {cpu['anchor'] * 1000:.1f} ms, cold {cpu['cold'] * 1000:.1f} ms (user+sys, children included)"
          f"  = {cpu['cold'] / cpu['anchor']:.2f}x")
    print(f"warm    await session.refresh()   median {w * 1000:7.1f} ms  = {w / anchor:.2f}x  (goal <= 0.25x)")
    print(f"load average (1 min) {load[0]:.2f} before, {load_after[0]:.2f} after, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
