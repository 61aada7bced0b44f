"""One-liners against the fastest peer: `relay targets` beside `session-peer list`, and a send's
plan on screen, on the same lab (issue 40).

    .venv/bin/python -m bench.oneliners [--runs 7] [--burners 2] [--relay PATH] [--baseline PATH]

On the lab that `RELAY_HOME` points at (one Claude Code, one Codex and one Gemini CLI session;
started here, and taken down after, when none runs), each command runs `--runs` times, all of
them in turn (a, b, c, a, b, c, ...), so other processes on a shared machine load each alike:
- `session-peer list` (session-peer 1.3.1, the `bench` extra: `pip install -e '.[bench]'`), when
  installed: the peer, which lists Claude Code and Codex sessions with no gate and no evidence;
- `claude agents --json`: Claude's own listing, which relay no longer waits for;
- `relay targets` and `relay targets --json` (goal: <= 1.0x the peer);
- `relay send KIND:NAME <text>` for each kind, in a pty, to its plan: the time from spawn until the
  plan is on screen (it is written at once, so its first line marks it; goal: <= 200 ms; when the
  plain pre-plan's plan was replaced by the models' "the plan changed" one, until that one), and in
  brackets until the `Proceed? [y/N]` prompt that follows it (prompt_toolkit loads after the plan),
  then `n` (nothing is sent; the bench checks that the command said it declined);
- `relay run ping -p target=KIND:NAME`, to its first plan the same way (for a Claude target, listing
  the inbox as a Claude peer comes first);
- the REPL's `await session.send(...)` on a warm session (discovered once, as the REPL does in the
  background): from the call until its gate is shown the rendered plan (goal: <= 50 ms), declined.

Wall medians, and beside them the median CPU of the whole command (user + sys, children included:
a listing's own process counts), which swings less than wall time when the machine is shared. `--burners N` runs
N busy loops beside everything (the issue's "beside two CPU burners"): report ratios then.
The load average is printed before and after: figures taken while other work ran are not a quiet
machine's.
"""

from __future__ import annotations

import argparse
import os
import pty
import resource
import select
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS_GOAL = 1.0  # x session-peer list
PLAN_GOAL = 0.200  # s, spawn to the plan on screen
REPL_GOAL = 0.050  # s, warm session.send to its plan
MESSAGE = "bench: this plan is answered No"
CHANGED = b"the plan changed while it was shown"
"""`relay send`'s plain pre-plan (frontends/send_plain.py) printed a plan the models then did not
agree with: the plan asked about is the second one, so that is the one timed (and the run counted)."""
CHANGED_RUNS: list[str] = []


def run_timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (children included) of one run, and its stdout."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cp = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cp.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {cp.returncode}: {cp.stderr.strip()[-400:]}")
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, cp.stdout


def to_plan(cmd: list[str], env: dict[str, str], timeout: float = 30.0) -> tuple[float, float, float]:
    """(seconds to the plan's first line, seconds to the y/N prompt, CPU seconds) of `cmd` in a pty,
    answered `n` once the prompt shows; raises if it never asks or does not decline."""
    master, slave = pty.openpty()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    buf, first, prompt, changed = b"", None, None, False
    try:
        while time.perf_counter() - t0 < timeout:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
                now = time.perf_counter() - t0
                if first is None and b"Plan:" in buf:
                    first = now
                if not changed and CHANGED in buf:  # the plan first shown was not the one asked about:
                    changed, first = True, now  # the plan on screen is the one printed after this line
                if prompt is None and b"Proceed? [y/N]" in buf:
                    prompt = now
                    os.write(master, b"n\r")
            elif proc.poll() is not None:
                break
        if prompt is None:
            raise RuntimeError(f"{' '.join(cmd)}: no y/N prompt within {timeout:g}s")
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = buf.decode("utf-8", "replace")
    if first is None or prompt is None or "declined" not in text:
        raise RuntimeError(f"{' '.join(cmd)}: no plan answered No:\n{text[-1500:]}")
    if changed:
        CHANGED_RUNS.append(" ".join(cmd))
    return first, prompt, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def repl_plans(env: dict[str, str], specs: list[str], runs: int) -> dict[str, float]:
    """Median seconds from `await session.send(spec, ...)` on a warm session to its gate holding
    the rendered plan (declined), per target spec."""
    os.environ.update(env)
    import anyio

    from relay_repl.session.app import make_session

    shown: list[float] = []

    async def gate(plan) -> bool:
        plan.render()  # what the REPL's gate prints first
        shown.append(time.perf_counter())
        return False

    async def go() -> dict[str, float]:
        out: dict[str, list[float]] = {s: [] for s in specs}
        session = make_session(approve=gate, echo=None)
        await session.refresh()  # warm: the REPL discovers in the background before the first send
        for spec in specs:
            await session.send(spec, MESSAGE)  # the first of a kind loads its transport's modules
        for i in range(runs):
            for spec in specs:
                t0 = time.perf_counter()
                d = await session.send(spec, f"{MESSAGE} ({i})")
                out[spec].append(shown[-1] - t0)
                assert d.outcome == "refused", d
        await session.close_inbox()
        return {s: statistics.median(v) for s, v in out.items()}

    return anyio.run(go)


def burn() -> None:
    while True:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--burners", type=int, default=0, help="busy loops to run beside the bench (default 0)")
    ap.add_argument("--relay", help="the `relay` executable (default: this virtualenv's)")
    ap.add_argument("--targets-only", action="store_true", help="time the listings only (no sends, runs or REPL)")
    ap.add_argument("--gemini", type=int, default=1, help="Gemini CLI sessions in the lab (default 1; session-peer "
                    "lists none: 0 compares like with like)")
    ap.add_argument("--baseline", metavar="RELAY", help="another `relay` executable (e.g. an older commit's, in its own "
                    "virtualenv) timed in the same runs, its rows marked (baseline)")
    args = ap.parse_args()

    from bench.bytecode import ensure_bytecode
    import relay_repl.lab.launcher as launcher

    print(ensure_bytecode())
    if args.baseline:  # its bytecode compiled too, so neither side compiles its modules on every run
        subprocess.run([str(Path(args.baseline).parent / "python"), "-c", "import compileall, os, relay_repl; "
                        "compileall.compile_dir(os.path.dirname(relay_repl.__file__), quiet=1)"], check=True)
    started = launcher.status() is None
    launcher.ensure_lab(lambda m: print(m, file=sys.stderr), claude=1, codex=1, gemini=args.gemini)
    st = launcher.status()
    env = {**os.environ, **launcher.env()}
    relay = args.relay or str(Path(sys.executable).parent / "relay")
    peer = shutil.which("session-peer", path=str(Path(sys.executable).parent)) or shutil.which("session-peer")
    claude = shutil.which("claude", path=env["PATH"])
    kinds = {"claude-code": "claude", "codex": "codex", "gemini-cli": "gemini"}
    specs = [f"{kinds[s.kind]}:{s.name}" for s in st.sessions if s.kind in kinds]

    cmds: dict[str, list[str]] = {}
    if peer:
        cmds["session-peer list"] = [peer, "list"]
    if claude:
        cmds["claude agents --json"] = [claude, "agents", "--json"]
    sends: dict[str, list[str]] = {}
    runs: dict[str, list[str]] = {}
    for exe, mark in [(relay, ""), *([(args.baseline, " (baseline)")] if args.baseline else [])]:
        cmds[f"relay targets{mark}"] = [exe, "targets"]
        cmds[f"relay targets --json{mark}"] = [exe, "targets", "--json"]
        for spec in ([] if args.targets_only else specs):
            sends[f"relay send {spec}{mark}"] = [exe, "send", spec]  # + a body new to the ledger each run
            # the first plan of a recipe run (`ping`: for a Claude target, listing the inbox as a Claude peer first)
            runs[f"relay run ping {spec}{mark}"] = [exe, "run", "ping", "-p", f"target={spec}"]

    import multiprocessing

    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for b in burners:
        b.start()
    load0 = os.getloadavg()
    wall: dict[str, list[float]] = {k: [] for k in [*cmds, *sends, *runs]}
    first: dict[str, list[float]] = {k: [] for k in [*sends, *runs]}
    cpu: dict[str, list[float]] = {k: [] for k in wall}
    try:
        for cmd in cmds.values():  # once untimed: page cache, bytecode, the lab's first answers
            run_timed(cmd, env)
        for _ in range(args.runs):
            for k, cmd in cmds.items():
                w, c, _ = run_timed(cmd, env)
                wall[k].append(w)
                cpu[k].append(c)
            plans = {k: [*cmd, f"{MESSAGE} ({time.time_ns()})"] for k, cmd in sends.items()}
            for k, cmd in [*plans.items(), *runs.items()]:
                f, w, c = to_plan(cmd, env)
                first[k].append(f)
                wall[k].append(w)
                cpu[k].append(c)
        repl = {} if args.targets_only else repl_plans(env, specs, args.runs)
    finally:
        load1 = os.getloadavg()
        for b in burners:
            b.kill()
        if started:
            launcher.down(progress=lambda m: None)

    med = {k: statistics.median(v) for k, v in wall.items()}
    mcpu = {k: statistics.median(v) for k, v in cpu.items()}
    anchor = med.get("session-peer list")
    print(f"load before {load0[0]:.2f} {load0[1]:.2f}, after {load1[0]:.2f} {load1[1]:.2f}; "
          f"{args.burners} burner(s); {args.runs} runs each, in turn; {os.cpu_count()} CPUs")
    print(f"{'command':44} {'wall ms':>8} {'cpu ms':>7} {'ratio':>6}  goal            held")
    for k in wall:
        ratio = f"{med[k] / anchor:5.2f}x" if anchor else "  -  "
        if k.startswith("relay targets"):
            goal = f"<= {TARGETS_GOAL:.1f}x peer"
            held = ("yes" if med[k] <= TARGETS_GOAL * anchor else "NO") if anchor else "no peer"
        elif k in first:
            plan = statistics.median(first[k])
            goal = f"plan <= {PLAN_GOAL * 1000:.0f} ms"
            held = "yes" if plan <= PLAN_GOAL else "NO"
            print(f"{k + ' (y/N ' + format(med[k] * 1000, '.0f') + ')':44} {plan * 1000:8.0f} {mcpu[k] * 1000:7.0f} "
                  f"{'-':>6}  {goal:15} {held}")
            continue
        else:
            goal, held = "(anchor)" if k == "session-peer list" else "-", ""
        print(f"{k:44} {med[k] * 1000:8.0f} {mcpu[k] * 1000:7.0f} {ratio:>6}  {goal:15} {held}")
    if CHANGED_RUNS:
        print(f"{len(CHANGED_RUNS)} run(s) printed a second plan (the first plain plan was not the models'; timed "
              f"to the second): {', '.join(sorted(set(CHANGED_RUNS)))}")
    for spec, s in repl.items():
        held = "yes" if s <= REPL_GOAL else "NO"
        print(f"{'REPL send ' + spec + ' (warm)':44} {s * 1000:8.1f} {'':>7} {'':>6}  plan <= {REPL_GOAL * 1000:.0f} ms   {held}")


if __name__ == "__main__":
    main()
