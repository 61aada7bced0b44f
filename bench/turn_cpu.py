"""What one receiver's turn costs in CPU, split by process: the client, its children, the stubs, relay.

    .venv/bin/python -m bench.turn_cpu [--turns 5] [--only claude codex] [--idle 10] [--settle 2] [--via mcp|relay-reply]

In a lab of one Claude + one Codex session (its own, in a temporary RELAY_HOME, unless
RELAY_HOME already has a lab up: then that one), for each turn: the operator's session sends
`want=reply` (scripted yes) and waits for the verified reply; the window closes `--settle`
seconds after the receiver is idle again, so what a client does right after its turn counts.
Every lab process (the tmux server's tree, the stub server, the Codex daemon) is sampled every
50 ms from /proc/PID/stat: a process's own CPU (utime+stime) from its first to its last
reading, and its reaped children's (cutime+cstime) minus what was seen of them, so a child
that lives and dies between two samples (a `git`, a shell) still counts, under its parent.
The sender (this process: session, inbox, verdict) is os.times(). Also the stub's record of
the turn's model requests: how many, main or side, their JSON body sizes.

`--via mcp`: the receiver answers with relay_reply on the relay MCP server its client already
runs (a stub rule makes that call), instead of its lab agent's own way (Claude: SendMessage;
Codex: that same relay_reply, since its client offers the server). `--via relay-reply`: a stub
rule makes the receiver run `relay reply` in its shell (one Python start per reply), the route
of a Codex with no relay MCP server: what the other route costs.

Before the turns, `--idle` seconds with nothing sent: each program's CPU at rest, as a rate
(an idle TUI that redraws or polls pays that during every turn too).

Why: ask-all over eight sessions was CPU-bound (issue 17): each receiver turn cost ~0.45-0.5
CPU-s and 2x the round trip needs ~0.24. This says where a turn's CPU goes, so what is avoidable
can be told from the clients' own work. The machine's load is printed beside every figure.

Measured 2026-12-02 (Claude Code 2.1.332, Codex 0.171.0; load 4.6-6.6 from other work, so CPU-s,
not wall time, is the figure to read), medians of 5-8 turns:
- Claude receiver: 0.29-0.47 CPU-s, all in the `claude` process itself (the first turns of a fresh
  session cost more, up to ~1 CPU-s). No child process, no failed network call in a turn (its
  debug log), 2 model requests of 70-90 KB (the SendMessage call, then the final text; a ToolSearch
  request before them on a session's first answer). Without `--debug-file`: no less (0.35 vs 0.29).
- Codex receiver by `relay reply` (the lab agent's way until issue 17's askcpu slice): 0.43-0.77 CPU-s, of which `relay reply`'s
  own Python start 0.22-0.39 (importing pydantic's BaseModel alone is 0.17), the app-server daemon
  0.11-0.18, the TUI 0.03-0.08, shells and the `git status`/`git config` Codex runs 0.02-0.05.
  Back to back in one fresh lab at load 3.7: 0.52 CPU-s a turn by `relay reply` (min 0.46), 0.23 by
  relay_reply on the relay MCP server it already runs (`--via mcp`; min 0.22), the server's share
  0.00-0.04.
- The sender (session, inbox, verdict) 0.02-0.06 per turn; the stub server 0.00-0.01.
- At rest: each client under 0.03 CPU-s per second.
- `bench.recipes --claude 4 --codex 4 --ask-all-only --by-process` (load 3-8, before the TUI
  category was fixed: its "pid loop" figure there was Codex TUIs 2-4): per 8-turn ask-all run,
  claude 2.0-2.7 CPU-s, `relay reply` 1.3-1.7, the Codex daemon 0.4-0.6, the Codex TUIs 0.4-0.7,
  stubs, tmux and unseen children 0.15-0.2; 6.4-8.5 CPU-s in all with the machine's other work.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")
SAMPLE = 0.05
CASES = {"claude": "claude-code", "codex": "codex"}


@dataclass
class Proc:
    pid: int
    start: int
    ppid: int
    comm: str
    args: str
    own0: float
    reaped0: float
    own: float = 0.0
    reaped: float = 0.0
    born: bool = False  # first seen after the window opened: all its CPU is the window's
    gone: bool = False
    kids: set[tuple[int, int]] = field(default_factory=set)


def _stat(pid: int) -> tuple[int, int, str, float, float] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2:].split()
    ppid, start = int(rest[1]), int(rest[19])
    own = (int(rest[11]) + int(rest[12])) / TICK
    reaped = (int(rest[13]) + int(rest[14])) / TICK
    return ppid, start, comm, own, reaped


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def cmdline_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def category(comm: str, args: str) -> str:
    """A program's name for the table: what it is in the lab, not only its comm."""
    argv = args.split()
    sub = argv[1] if len(argv) > 1 else ""
    if sub == "app-server":  # not a TUI whose `--remote unix://.../app-server-control.sock` names it
        return "codex app-server (daemon)" if "--listen" in argv else "codex app-server (pid loop)"
    if comm in ("codex", "claude"):
        return f"{comm} (client)"
    if re.search(r"/relay mcp\b|-m relay_repl mcp\b", args):
        return "relay mcp"
    if re.search(r"/relay reply\b|-m relay_repl reply\b", args):
        return "relay reply"
    if "relay_repl.lab.stubs" in args:
        return "stub server"
    if comm.startswith("tmux"):
        return "tmux server"
    if comm in ("bash", "sh", "zsh", "dash"):
        return f"shell ({comm})"
    if args.startswith("node ") or comm == "node":
        return "node (codex npm wrapper)" if "codex" in args else "node"
    return comm


class Sampler:
    """Every lab process under `roots`, read every SAMPLE seconds in a thread."""

    def __init__(self, roots: list[int], interval: float = SAMPLE) -> None:
        self.roots = roots
        self.interval = interval
        self.procs: dict[tuple[int, int], Proc] = {}
        self.opened = False
        self.own_cpu = 0.0  # this sampler thread's CPU: not the sender's
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def scan(self) -> None:
        seen: set[tuple[int, int]] = set()
        todo = list(self.roots)
        while todo:
            pid = todo.pop()
            st = _stat(pid)
            if st is None:
                continue
            ppid, start, comm, own, reaped = st
            key = (pid, start)
            seen.add(key)
            p = self.procs.get(key)
            if p is None:
                born = self.opened
                p = self.procs[key] = Proc(pid, start, ppid, comm, cmdline_of(pid), 0.0 if born else own,
                                           0.0 if born else reaped, born=born)
                parent = next((q for k, q in self.procs.items() if k[0] == ppid and not q.gone), None)
                if parent is not None:
                    parent.kids.add(key)
            elif comm != p.comm:  # an exec after the fork: name it by what it runs now
                p.comm, p.args = comm, cmdline_of(pid)
            p.own, p.reaped = own, reaped
            todo += _children(pid)
        for key, p in self.procs.items():
            if key not in seen:
                p.gone = True

    def open(self) -> None:
        """Start the window: every process's readings now are its zero."""
        self.scan()
        for p in self.procs.values():
            p.own0, p.reaped0 = p.own, p.reaped
        self.procs = {k: p for k, p in self.procs.items() if not p.gone}
        self.opened = True

    def _loop(self) -> None:
        t0 = time.thread_time()
        while not self._stop.wait(self.interval):
            self.scan()
        self.own_cpu = time.thread_time() - t0

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.scan()

    def by_category(self) -> dict[str, float]:
        """CPU-s per category in the window: own, plus reaped children not seen (under the parent's
        name + ' children')."""
        out: dict[str, float] = defaultdict(float)

        def exited(key: tuple[int, int]) -> float:
            """What an exited child adds to its parent's reaped CPU: its own, and its own children's,
            which it may have reaped after its last reading (a shell waiting for `relay reply`).
            Its whole life, also the part before the window (a `relay reply` still running when the
            last window closed): its window's share is in its own row, the rest is no one's."""
            k = self.procs[key]
            if not k.gone:
                return 0.0
            return k.own + max(k.reaped, sum(exited(g) for g in k.kids))

        for p in self.procs.values():
            cat = category(p.comm, p.args)
            out[cat] += p.own - p.own0
            unseen = (p.reaped - p.reaped0) - sum(exited(k) for k in p.kids)
            if unseen > 0.005:
                out[f"{cat}: unseen children"] += unseen
        return {k: v for k, v in out.items() if abs(v) > 0.0}

    def spawned(self) -> list[str]:
        """Short-lived processes the window saw start: `comm args` of each."""
        return [f"{category(p.comm, p.args)} (pid {p.pid} of {p.ppid}, {p.own:.2f}+{p.reaped:.2f} CPU-s): {p.args[:80]}"
                for p in self.procs.values() if p.born]


def load() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


def lab_roots() -> list[int]:
    """The stub server and the tmux server of the lab (the clients, their children and the Codex
    daemon are under it)."""
    import relay_repl.agents.codex.lab as codex_lab
    import relay_repl.lab.launcher as launcher

    st = launcher.status()
    if st is None:
        raise SystemExit("no lab up")
    roots = [st.stub.pid] if st.stub.pid else []
    pane_pids = {s.pane_pid for s in st.sessions if s.pane_pid}
    for pid in pane_pids:
        ppid = (_stat(pid) or (0,))[0]
        if ppid and ppid not in roots:
            roots.append(ppid)  # the tmux server
    for s in st.sessions:
        daemon = codex_lab.lab_facts(s).daemon_pid
        if daemon and daemon not in roots:
            roots.append(daemon)  # also under its first TUI; a second start is not walked twice
    return roots


def stub_requests(name: str) -> list[Any]:
    import relay_repl.lab.launcher as launcher
    from relay_repl.lab.stubs.client import SyncStubClient

    st = launcher.status()
    assert st is not None
    return SyncStubClient(st.stub.control).requests(name)


def describe(reqs: list[Any]) -> str:
    parts = []
    for r in reqs:
        size = len(json.dumps(r.body)) if r.body is not None else 0
        what = r.reply_tool or ("text" if r.kind == "main" else r.side_reason)
        took = (r.finished - r.time) if r.finished else 0.0
        parts.append(f"{r.kind}:{what} {size / 1024:.0f}KB {took * 1000:.0f}ms")
    return f"{len(reqs)} requests [" + ", ".join(parts) + "]"


def table(rows: list[dict[str, float]], idle: dict[str, float] | None, window: list[float]) -> None:
    cats = sorted({c for r in rows for c in r}, key=lambda c: -statistics.median([r.get(c, 0.0) for r in rows]))
    total = [sum(r.values()) for r in rows]
    print(f"  {'program':<40} {'median':>7} {'min':>6} {'max':>6}  idle rate x window")
    for c in cats:
        xs = [r.get(c, 0.0) for r in rows]
        rest = "" if idle is None else f"  {idle.get(c, 0.0) * statistics.median(window):.3f}"
        print(f"  {c:<40} {statistics.median(xs):7.3f} {min(xs):6.3f} {max(xs):6.3f}{rest}")
    print(f"  {'TOTAL (lab processes + sender)':<40} {statistics.median(total):7.3f} {min(total):6.3f} "
          f"{max(total):6.3f}")


def route_rule(name: str, body: str, relay_id: str, via: str) -> None:
    """Make the receiver's stub answer `body` by relay_reply on the relay MCP server (`via` mcp)
    or by `relay reply` in its shell (`via` relay-reply)."""
    import shlex

    import relay_repl.lab.launcher as launcher
    from relay_repl.lab.stubs.client import SyncStubClient

    st = launcher.status()
    assert st is not None
    text = f"reply to {relay_id}: received"
    if via == "mcp":
        tool, args = "mcp__relay__relay_reply", {"relay_id": relay_id, "text": text}
    else:
        tool, args = "exec_command", {"cmd": f"relay reply {shlex.quote(relay_id)} {shlex.quote(text)}"}
    SyncStubClient(st.stub.control).tool_call(name, tool, args, then_text=f"answered {relay_id} by {via}",
                                              match=re.escape(body), once=True)


async def turns(kind: str, n: int, settle: float, idle_s: float, via: str | None = None) -> None:
    import anyio

    import relay_repl.lab.helpers as helpers
    import relay_repl.lab.launcher as launcher
    from relay_repl.session.app import make_session

    st = launcher.status()
    assert st is not None
    lab = next(x for x in st.sessions if x.kind == CASES[kind])
    spec = f"{'claude' if kind == 'claude' else 'codex'}:{lab.name}"

    async def yes(plan: Any) -> bool:
        return True

    s = make_session(approve=yes, echo=None)
    rows: list[dict[str, float]] = []
    windows: list[float] = []
    async with anyio.create_task_group() as tg:
        await s.open_inbox(tg)
        try:
            if kind == "claude":
                await s.register_inbox()
            await s.refresh()
            idle: dict[str, float] | None = None
            if idle_s > 0:
                with Sampler(lab_roots()) as smp:
                    smp.open()
                    await anyio.sleep(idle_s)
                idle = {c: v / idle_s for c, v in smp.by_category().items()}
                print(f"{kind}: at rest, CPU-s per s by program (load {load()}): "
                      + ", ".join(f"{c} {v:.3f}" for c, v in sorted(idle.items(), key=lambda x: -x[1]) if v > 0.001))
            for i in range(n):
                await anyio.to_thread.run_sync(lambda: helpers.wait_idle(lab.name, timeout=60))
                before = len(stub_requests(lab.name))
                la = load()
                with Sampler(lab_roots()) as smp:
                    smp.open()
                    t0, c0 = time.monotonic(), os.times()
                    body, rid = f"turn cpu bench {i}", None
                    if via is not None:
                        rid = s.ledger.next_id(s.me.address)
                        route_rule(lab.name, body, rid, via)
                    d = await s.send(spec, body, want="reply", timeout=30, relay_id=rid, reply_via=via)
                    reply = await d.wait_reply(60)
                    if reply is None or reply.verdict is None or not reply.verdict.ok:
                        raise SystemExit(f"{kind}: turn {i}: no verified reply ({d.summary()})")
                    rt = time.monotonic() - t0
                    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(lab.name, timeout=60))
                    await anyio.sleep(settle)
                    c1, window = os.times(), time.monotonic() - t0
                row = smp.by_category()
                row["relay sender (session, inbox)"] = (c1.user - c0.user) + (c1.system - c0.system) - smp.own_cpu
                rows.append(row)
                windows.append(window)
                reqs = stub_requests(lab.name)[before:]
                print(f"{kind} turn {i}: reply in {rt:.2f} s, window {window:.2f} s, "
                      f"{sum(row.values()):.3f} CPU-s (load {la}; the sampler's own {smp.own_cpu:.2f} left out); "
                      f"{describe(reqs)}")
                for line in smp.spawned():
                    print(f"    spawned {line}")
            print(f"{kind}: CPU-s per turn by program, {n} turns (load now {load()}):")
            table(rows, idle, windows)
        finally:
            await s.close_inbox()
            tg.cancel_scope.cancel()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="kinds to measure (default: both)")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds after the receiver is idle again")
    ap.add_argument("--idle", type=float, default=10.0, help="seconds measured at rest first (0: none)")
    ap.add_argument("--via", choices=["mcp", "relay-reply"],
                    help="answer with relay_reply on the relay MCP server, or `relay reply` in the shell")
    args = ap.parse_args()
    import anyio

    import relay_repl.store.paths as paths
    from bench.lab import running_or_own_lab

    os.environ.setdefault("RELAY_LAB_CLIENTS", str(paths.clients_dir()))
    with running_or_own_lab("relay-bench-turncpu-"):
        for kind in CASES:
            if not args.only or kind in args.only:
                anyio.run(turns, kind, args.turns, args.settle, args.idle, args.via)


if __name__ == "__main__":
    main()
