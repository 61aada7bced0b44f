"""Per target kind: time from the operator's approval to a verified reply in the operator's inbox.

    .venv/bin/python -m bench.roundtrip [--runs 10] [--only claude codex]

In a fresh lab: `send(target, ..., want="reply")`, the gate says yes (clock starts),
the lab agent answers the way a real one is asked to (Claude: SendMessage to the
listed inbox; Codex: relay_reply on the relay MCP server its client offers; before
issue 17's askcpu slice it ran `relay reply`, whose Python start counted), and
the clock stops when the inbox has judged the answer `verified` and linked it to
the delivery (the message's arrival time). Median of N. Goals: Claude <= 0.5 s,
Codex <= 1.5 s. The stub models answer at once, so this is relay's and the
clients' own share of a round trip, not a model's thinking time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

GOALS = {"claude": 0.5, "codex": 1.5}
CASES = {"claude": ("claude:alpha", "alpha"), "codex": ("codex:beta", "beta")}


async def measure(kind: str, runs: int) -> list[float]:
    import anyio

    import relay_repl.lab.helpers as helpers
    from relay_repl.session.app import make_session

    spec, lab_name = CASES[kind]
    approved_at: list[float] = []

    async def approve(plan) -> bool:
        approved_at.append(time.time())
        return True

    s = make_session(approve=approve, echo=None)
    out: list[float] = []
    async with anyio.create_task_group() as tg:
        await s.open_inbox(tg)
        try:
            if kind == "claude":
                await s.register_inbox()
            for i in range(runs):
                await anyio.to_thread.run_sync(lambda: helpers.wait_idle(lab_name, timeout=60))
                await s.refresh()
                d = await s.send(spec, f"bench round trip {i}", want="reply", timeout=30)
                reply = await d.wait_reply(30)
                if reply is None or reply.verdict is None or not reply.verdict.ok:
                    raise SystemExit(f"{kind}: run {i}: no verified reply ({d.summary()})")
                out.append(reply.at - approved_at[-1])
        finally:
            await s.close_inbox()
            tg.cancel_scope.cancel()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="kinds to measure (default: both)")
    args = ap.parse_args()
    import anyio

    import relay_repl.lab.launcher as launcher
    import relay_repl.store.paths as paths

    os.environ.setdefault("RELAY_LAB_CLIENTS", str(paths.clients_dir()))
    with tempfile.TemporaryDirectory(prefix="relay-bench-rt-") as home:
        os.environ["RELAY_HOME"] = home
        launcher.up(claude=1, codex=1, progress=lambda m: None)
        os.environ.update(launcher.env())
        try:
            for kind in CASES:
                if args.only and kind not in args.only:
                    continue
                try:
                    t = anyio.run(measure, kind, args.runs)
                except SystemExit as exc:
                    print(f"{kind:<7} FAILED: {exc}")
                    continue
                med = statistics.median(t)
                print(f"{kind:<7} {CASES[kind][0]:<13} approval -> verified reply: median {med * 1000:6.0f} ms "
                      f"(min {min(t) * 1000:.0f}, max {max(t) * 1000:.0f}, n={len(t)}) = "
                      f"{med / GOALS[kind]:.2f}x of the {GOALS[kind]:.1f} s goal")
        finally:
            launcher.down(progress=lambda m: None)


if __name__ == "__main__":
    main()
