"""What a new ledger costs: `Ledger(path)` on a path where none exists yet, then closed.

    .venv/bin/python -m bench.ledger [--n 60] [--dir /tmp]

Every fresh RELAY_HOME pays it once (the first send, the first inbox); the live walk of
tests/session/test_approval_live.py pays it once per call (1,028 calls), so on a busy disk it
was most of that test's time. The cost is disk syncs, not CPU: it varies with what else writes
to the disk, so compare figures taken side by side (the machine's load is printed beside).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from relay_repl.store.ledger import Ledger


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="new ledgers to create")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where (the disk matters)")
    args = ap.parse_args()
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
