"""Bounded work on any input (issue 38): the time to refuse a long body and to neutralise a long
peer line, and how each grows from 10 KB to 1 MB.

    .venv/bin/python -m bench.bounded [--repeat 5]

- refuse: `await session.send("fake:inbox", BODY)` (the in-memory target of `relay --fake`,
  nothing to discover) until it raises the one-line refusal. Before issue 38 the peer-text
  provenance scan ran before the length check and was quadratic: 100,000 characters took 50 s,
  1 MB did not return in 3 minutes. The size check now comes first.
- neutralise: `core.controls.visible` (the one neutraliser every echo of a peer's text passes) on
  a peer line holding an escape sequence, a bidi override and a lone surrogate every 100 bytes,
  and on one holding none; `quote` (a peer's words passed on) and `consent_acts` (the consent flag)
  beside them, for the record.

Goal: both under 50 ms at 1 MB, and linear: from 100 KB to 1 MB (10x the input) the time grows
at most 50x, half-way to quadratic (a quadratic scan grows 100x, and 10,000x over the whole 10 KB
to 1 MB printed beside). Linear work is not a linear time here: a 1 MB result no longer fits the
CPU cache the 100 KB one did, so neutralising a line with controls in it measured 15x over 10x the
input on a quiet machine (10 ms at 1 MB) and 29x at load 7 (19 ms). Prints the goal and whether it held; exit 1 when it did not. Each figure is the
fastest of --repeat runs; other processes on the machine slow every figure: the load average is
printed beside them.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import anyio

SIZES = (10_000, 100_000, 1_000_000)
GOAL_MS = 50.0
LINEAR = 50.0  # at most this growth over 10x the input (100 KB to 1 MB): half-way between linear and quadratic


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """The fastest of `repeat` runs, in ms (the least disturbed by other processes)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1000


def refuse_times(repeat: int) -> dict[int, float]:
    from relay_repl.core.errors import EnvelopeError
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import DenyGate

    out: dict[int, float] = {}

    async def main() -> None:
        session = make_session(fake=True, discover=False, approve=DenyGate(), echo=None)
        for n in SIZES:
            body = "y" * n
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                try:
                    await session.send("fake:inbox", body)
                except EnvelopeError:
                    pass
                else:
                    raise SystemExit(f"a {n}-character body was not refused")
                times.append(time.perf_counter() - t)
            out[n] = min(times) * 1000

    anyio.run(main)
    return out


def peer_line(n: int, hostile: bool) -> str:
    unit = "a reviewer's words, pushed back: " + ("\x1b[31m red \u202e evil \ud800 " if hostile else "plain text. ")
    unit = unit.ljust(100, ".")
    return (unit * (n // len(unit) + 1))[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    from relay_repl.core.controls import visible
    from relay_repl.core.peertext import consent_acts, quote

    os.environ.setdefault("RELAY_HOME", __import__("tempfile").mkdtemp(prefix="bench-bounded-"))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    rows: dict[str, dict[int, float]] = {"refuse a body (session.send)": refuse_times(args.repeat)}
    for label, hostile in (("neutralise a peer line, controls every 100 B (visible)", True),
                           ("neutralise a peer line, none in it (visible)", False)):
        lines = {n: peer_line(n, hostile) for n in SIZES}
        rows[label] = {n: best_of(args.repeat, lambda n=n: visible(lines[n])) for n in SIZES}
    every = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))  # 65 different ones: the translate path
    lines = {n: (every * (n // len(every) + 1))[:n] for n in SIZES}
    rows["neutralise a line of controls only, 65 kinds (visible), for the record"] = {
        n: best_of(args.repeat, lambda n=n: visible(lines[n])) for n in SIZES}
    lines = {n: peer_line(n, True) for n in SIZES}
    rows["quote a peer line (peertext.quote), for the record"] = {
        n: best_of(args.repeat, lambda n=n: quote("codex:beta", "verified", lines[n])) for n in SIZES}
    rows["flag consent-only asks (consent_acts), for the record"] = {
        n: best_of(args.repeat, lambda n=n: consent_acts(lines[n])) for n in SIZES}
    print(f"{'':72}" + "".join(f"{f'{n // 1000} KB':>12}" for n in SIZES) + f"{'x10 KB':>9}{'x100 KB':>9}")
    held = True
    for label, times in rows.items():
        whole = times[SIZES[-1]] / max(times[SIZES[0]], 1e-3)
        growth = times[SIZES[-1]] / max(times[SIZES[1]], 1e-3)
        print(f"{label:72}" + "".join(f"{times[n]:10.2f}ms" for n in SIZES) + f"{whole:8.0f}x{growth:8.1f}x")
        if "for the record" not in label:
            held &= times[SIZES[-1]] < GOAL_MS and growth <= LINEAR
    print(f"goal: refuse a 1 MB body and neutralise a 1 MB peer line in under {GOAL_MS:g} ms each, growing linearly "
          f"(at most {LINEAR:g}x from 100 KB to 1 MB): {'held' if held else 'NOT held'}")
    return 0 if held else 1


if __name__ == "__main__":
    raise SystemExit(main())
