"""Per transport: time from the operator's approval to confirmed delivery, idle target, in the lab.

    .venv/bin/python -m bench.transports [--runs 10]

The clock starts when the gate returns yes and stops when the transport has
read receiver evidence (transcript record / rollout turn). Goals: socket
<= 0.5 s, tmux <= 1.0 s, codex-queue <= 1.0 s. For scale the seed measured
0.886 s to the model over the socket and 3.264 s for staged tmux input.

Under each line, the median time from approval at which each stage was recorded,
and `receiver`: the timestamp the receiver itself wrote on the record that
confirmed delivery (the rollout's UserMessage item, the transcript's record), so
the receiver's own time (from the last key or the enqueue to that record) is
separated from relay's (spawning `codex queue`, typing, polling for the record).
`--target codex:beta` measures one target only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

GOALS = {"claude-code-socket": 0.5, "claude-code-message": 0.5, "codex-queue": 1.0, "tmux": 1.0}


def receiver_time(data: dict) -> float | None:
    """The wall time the receiver wrote on its confirming record (ISO `at`/`timestamp`), if any."""
    from datetime import datetime

    for src in (data, data.get("item") or {}, data.get("record") or {}):
        at = src.get("at") if isinstance(src, dict) else None
        if isinstance(at, str):
            try:
                return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return None
    return None


def stage_times(d, approved: float) -> dict[str, float]:
    """Seconds from approval to each stage's (last) record, and to the receiver's own record."""
    out: dict[str, float] = {}
    for ev in d.evidence:
        out[f"{ev.stage}:{ev.state.value}"] = ev.at - approved
        rt = receiver_time(ev.data)
        if rt is not None:
            out["receiver wrote its record"] = rt - approved
    return out


async def measure(transport: str, spec: str, lab_name: str, runs: int,
                  stages: list[dict[str, float]] | None = None) -> list[float]:
    import anyio

    from relay_repl.session.app import make_session
    import relay_repl.lab.helpers as helpers

    approved_at: list[float] = []
    approved_wall: list[float] = []

    async def approve(plan) -> bool:
        approved_at.append(time.perf_counter())
        approved_wall.append(time.time())
        return True

    s = make_session(approve=approve, echo=None)
    out = []
    async with anyio.create_task_group() as tg:
        await s.open_inbox(tg)
        if transport == "claude-code-message":
            await s.register_inbox()
        try:
            for i in range(runs):
                await anyio.to_thread.run_sync(lambda: helpers.wait_idle(lab_name, timeout=60))
                await s.refresh()
                d = await s.send(spec, f"bench {transport} {i}", transport=transport, timeout=30)
                done = time.perf_counter()
                if d.outcome != "delivered":
                    raise SystemExit(f"{transport}: run {i} not delivered: {d.summary()}")
                out.append(done - approved_at[-1])
                if stages is not None:
                    stages.append(stage_times(d, approved_wall[-1]))
        finally:
            await s.close_inbox()
            tg.cancel_scope.cancel()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--only", nargs="*", help="transports to measure (default: all available)")
    ap.add_argument("--target", nargs="*", help="targets to measure (claude:alpha, codex:beta; default both)")
    args = ap.parse_args()
    import anyio

    import relay_repl.store.paths as paths
    import relay_repl.lab.launcher as launcher

    os.environ.setdefault("RELAY_LAB_CLIENTS", str(paths.clients_dir()))
    cases = [("claude-code-socket", "claude:alpha", "alpha"), ("claude-code-message", "claude:alpha", "alpha"),
             ("codex-queue", "codex:beta", "beta"), ("tmux", "claude:alpha", "alpha"), ("tmux", "codex:beta", "beta")]
    with tempfile.TemporaryDirectory(prefix="relay-bench-tx-") as home:
        os.environ["RELAY_HOME"] = home
        launcher.up(claude=1, codex=1, progress=lambda m: None)
        os.environ.update(launcher.env())
        try:
            for transport, spec, name in cases:
                if args.only and transport not in args.only or args.target and spec not in args.target:
                    continue
                stages: list[dict[str, float]] = []
                try:
                    t = anyio.run(measure, transport, spec, name, args.runs, stages)
                except SystemExit as exc:
                    print(f"{transport:<20} {spec:<13} FAILED: {exc}")
                    continue
                med = statistics.median(t)
                print(f"{transport:<20} {spec:<13} median {med * 1000:6.0f} ms  (min {min(t) * 1000:.0f}, max "
                      f"{max(t) * 1000:.0f}, n={len(t)})  = {med / GOALS[transport]:.2f}x of the {GOALS[transport]:.1f} s goal")
                keys = sorted({k for st in stages for k in st}, key=lambda k: statistics.median(
                    [st[k] for st in stages if k in st]))
                print("    " + ", ".join(f"{k} {statistics.median([st[k] for st in stages if k in st]) * 1000:.0f}"
                                         for k in keys) + "  (ms from approval, medians)")
        finally:
            launcher.down(progress=lambda m: None)


if __name__ == "__main__":
    main()
