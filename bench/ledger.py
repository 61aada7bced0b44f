"""What a new ledger costs: `Ledger(path)` on a path where none exists yet, then closed.

    .venv/bin/python -m bench.ledger [--n 60] [--dir /tmp]
    .venv/bin/python -m bench.ledger --history 15000

`--history N`: what the check before every plan costs (session/core/unfinished.py: the sweep for
interrupted sends, then earlier sends of the same body) in a ledger holding N finished sends
(six events each). It read every event once per plan: 9.5 ms at 9,000 events, 93 ms at
90,000; from the `unfinished_from` mark and the events_sends index (issue 17) 0.0-0.1 ms
after the first sweep of an old ledger, which still reads it whole once (84 ms at 90,000).

Every fresh RELAY_HOME pays it once (the first send, the first inbox); the live walk of
tests/session/test_approval_live.py pays it once per call (1,028 calls), so on a busy disk it
was most of that test's time. The cost is disk syncs, not CPU: it varies with what else writes
to the disk, so compare figures taken side by side (the machine's load is printed beside).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from relay_repl.store.ledger import Ledger


def history(sends: int, where: str) -> None:
    """Time the plan-time check three times over a ledger of `sends` finished sends."""
    from relay_repl.session.core.unfinished import earlier_unfinished, sweep_interrupted

    d = Path(tempfile.mkdtemp(prefix="bench-ledger-", dir=where))
    try:
        led = Ledger(d / "ledger.sqlite")
        with led._tx() as con:
            for i in range(sends):
                key = f"bench-{i}"
                rows = [("delivery", json.dumps({"spec": f"claude:s{i % 8}", "body": f"hello {i}"})),
                        ("plan", "{}"), ("answer", '{"approved":true}'), ("stage:write", '{"state":"written"}'),
                        ("stage:transcript", '{"state":"delivered"}'), ("outcome", '{"state":"delivered"}')]
                con.executemany("INSERT INTO events(at, kind, delivery, relay_id, data) VALUES (?, ?, ?, ?, ?)",
                                [(time.time(), kind, key, key, data) for kind, data in rows])
        for n in range(3):
            t0 = time.perf_counter()
            sweep_interrupted(led)
            t1 = time.perf_counter()
            earlier_unfinished(led, "claude:s1", "a body never sent")
            t2 = time.perf_counter()
            print(f"plan-time check #{n + 1} over {sends} sends ({6 * sends} events): sweep {(t1 - t0) * 1000:.1f} ms, "
                  f"earlier sends {(t2 - t1) * 1000:.1f} ms")
        led.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="new ledgers to create")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where (the disk matters)")
    ap.add_argument("--history", type=int, default=0, metavar="N",
                    help="instead: the check before every plan, in a ledger of N finished sends")
    args = ap.parse_args()
    if args.history:
        history(args.history, args.dir)
        return
    d = Path(tempfile.mkdtemp(prefix="bench-ledger-", dir=args.dir))
    try:
        t = time.perf_counter()
        for _ in range(args.n):
            Ledger(d / f"l{uuid.uuid4().hex}.sqlite").close()
        per = (time.perf_counter() - t) / args.n
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"new ledger: {per * 1000:.1f} ms each (n={args.n}, in {args.dir}; load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
