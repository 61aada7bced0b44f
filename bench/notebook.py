"""The notebook runner's own cost (issue 18).

    .venv/bin/python -m bench.notebook [--cells 40] [--repeats 15] [--runs 10]

1. Per cell: a notebook of N cells, each a send to the in-memory target (scripted yes)
   and a little Python, run by the notebook runner; against the same cells compiled with
   top-level await and `eval`ed one after another by a bare asyncio loop on the same
   session. The time inside the send itself (`Sender.send`, the gate included, below a
   run's hooks) is taken out of both; what is left per cell, runner minus bare, is the
   runner's own time (its send hook's records for resume, recording outputs,
   plans and deliveries, cells.jsonl, the report). Goal: median <= 5 ms per cell.
2. Start: `relay --fake notebook run FILE.py` from spawn until its first cell's output is
   on a real terminal (a private tmux server), against `relay --fake` until its `>>>`
   prompt. Goal: <= 1.2x.

Run it by hand on a quiet machine (never a timed test).
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

GOAL_PER_CELL_MS = 5.0
GOAL_START = 1.2

CELL = '''# %% cell {i}
d{i} = await session.send("fake:inbox", "cell {i}")
rows = [(k, k * k) for k in range(50)]
print("cell {i}", d{i}.state.value, sum(v for _, v in rows))
'''


class Clock:
    inside = 0.0


def timed_sends() -> None:
    """The send itself timed at its class: below the run's hooks (the runner's recording is its own time)."""
    from relay_repl.session.core.sending import Sender

    original = Sender.send

    async def send(self: Any, *a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return await original(self, *a, **kw)
        finally:
            Clock.inside += time.perf_counter() - t

    Sender.send = send  # type: ignore[method-assign]


def session(home: Path) -> Any:
    from relay_repl.agents.discovery import StaticProvider
    from relay_repl.session.core.gate import ScriptedGate
    from relay_repl.session.session import Session
    from relay_repl.store.ledger import Ledger
    from relay_repl.transports.fake import InMemoryTransport, fake_target

    return Session(ledger=Ledger(home / "ledger.sqlite"), approve=ScriptedGate([True] * 10_000),
                   providers=[StaticProvider("fake", [fake_target()])], transports=[InMemoryTransport()],
                   echo=lambda s: None)


async def per_cell(n: int, repeats: int) -> tuple[list[float], list[float]]:
    from relay_repl.core.notebook_cells import compile_cell, parse_cells
    from relay_repl.session.runs.notebook import run_notebook

    runner_ms: list[float] = []
    bare_ms: list[float] = []
    devnull = open(os.devnull, "w")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_nb.py"
        path.write_text("".join(CELL.format(i=i) for i in range(n)))
        nb = parse_cells(path.read_text(), str(path))
        for _ in range(repeats):
            s = session(Path(tmp))
            await s.refresh()
            Clock.inside = 0.0
            saved = sys.stdout
            sys.stdout = devnull
            t = time.perf_counter()
            try:
                run = await run_notebook(s, path, out=devnull, progress=lambda line: None)
            finally:
                sys.stdout = saved
            wall = time.perf_counter() - t
            assert run.state == "done", run.reason
            runner_ms.append((wall - Clock.inside) / n * 1000)

            s = session(Path(tmp))
            await s.refresh()
            ns: dict[str, Any] = {"session": s, "anyio": anyio, "__name__": "__main__"}
            codes = [compile_cell(c, str(path)) for c in nb.code_cells]
            Clock.inside = 0.0
            sys.stdout = devnull
            t = time.perf_counter()
            try:
                for body, last in codes:
                    for code in (body, last):
                        if code is None:
                            continue
                        value = eval(code, ns)  # noqa: S307 - the benchmark's own cells
                        if code.co_flags & inspect.CO_COROUTINE:
                            await value
            finally:
                sys.stdout = saved
            wall = time.perf_counter() - t
            bare_ms.append((wall - Clock.inside) / n * 1000)
    return runner_ms, bare_ms


def start_ratio(runs: int) -> tuple[float, float]:
    import libtmux

    bindir = os.path.dirname(sys.executable)

    def time_until(server: Any, command: str, env: str, seen: str) -> float:
        t0 = time.perf_counter()
        sess = server.new_session(session_name=uuid.uuid4().hex[:8], x=160, y=40, window_command=f"env {env} {command}")
        pane = sess.active_window.active_pane
        try:
            while time.perf_counter() - t0 < 30:
                if any(line.startswith(seen) for line in pane.capture_pane()):
                    return time.perf_counter() - t0
                time.sleep(0.005)
            raise RuntimeError(f"nothing from {command!r} within 30 s")
        finally:
            sess.kill()

    # With a `claude` on PATH and a Claude config that has sessions/, discovery lists them
    # (`claude agents --json`, a node process) as on an operator's machine: the notebook waits
    # for that listing before its first cell, the REPL draws its prompt first.
    claude = shutil.which("claude", path=os.path.join(os.environ.get("RELAY_LAB_CLIENTS", ""), "node_modules", ".bin")
                          + os.pathsep + os.environ.get("PATH", ""))
    path = f"{bindir}:{os.path.dirname(claude)}:/usr/bin:/bin" if claude else f"{bindir}:/usr/bin:/bin"
    print(f"start: discovery lists Claude sessions with {claude}" if claude else "start: no claude on PATH")
    with tempfile.TemporaryDirectory() as home:
        nb = Path(home) / "first.py"
        nb.write_text('# %% first\nprint("FIRST CELL")\n')
        if claude:
            (Path(home) / ".claude" / "sessions").mkdir(parents=True)
        env = f"HOME={home} RELAY_HOME={home}/relay TERM=xterm-256color LANG=C.UTF-8 PATH={path}"
        server = libtmux.Server(socket_name=f"relay-bench-{uuid.uuid4().hex[:6]}")
        server.new_session(session_name="keep", x=80, y=20)
        cmds = {"repl": (f"{bindir}/relay --fake", ">>>"),
                "notebook": (f"{bindir}/relay --fake notebook run {nb}; sleep 30", "FIRST CELL")}
        try:
            for c, seen in cmds.values():
                time_until(server, c, env, seen)
            samples: dict[str, list[float]] = {k: [] for k in cmds}
            for _ in range(runs):
                for k, (c, seen) in cmds.items():
                    samples[k].append(time_until(server, c, env, seen))
        finally:
            server.kill()
    return statistics.median(samples["repl"]), statistics.median(samples["notebook"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--runs", type=int, default=10, help="start-up samples of each")
    ap.add_argument("--skip-start", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("RELAY_HOME", tempfile.mkdtemp(prefix="relay-bench-"))
    timed_sends()
    runner, bare = anyio.run(per_cell, args.cells, args.repeats)
    own = [r - b for r, b in zip(runner, bare)]
    print(f"per cell, outside sends and the gate ({args.cells} cells x {args.repeats}):")
    print(f"  runner   median {statistics.median(runner):6.2f} ms")
    print(f"  bare     median {statistics.median(bare):6.2f} ms")
    print(f"  runner's own time per cell: median {statistics.median(own):.2f} ms (goal <= {GOAL_PER_CELL_MS:g} ms)")
    if not args.skip_start:
        repl, nb = start_ratio(args.runs)
        print(f"start: relay --fake to >>> {repl * 1000:.0f} ms; relay --fake notebook run to its first cell "
              f"{nb * 1000:.0f} ms; ratio {nb / repl:.2f}x (goal <= {GOAL_START:g}x)")


if __name__ == "__main__":
    main()
