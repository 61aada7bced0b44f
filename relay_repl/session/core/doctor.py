"""`relay doctor`: is every layer relay stands on in working order here, and if not, what next.

Why one command: a failed send can stem from any layer (no tmux, an unverified client,
an unreadable registry, a Codex daemon that is down, a halt left in force), and the
error at the top names only the symptom. Each check reads, never writes: the state
directory is tested with access(2), the ledger and the queue are opened read-only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from relay_repl.store.sqlite_read import connect_read_only

from relay_repl.core.check import Check


class Report(list):
    """The checks in order; prints as one line each (with the next step under a failure)."""

    @property
    def ok(self) -> bool:
        """No row failed (a skipped row had nothing to check: it neither passes nor fails)."""
        return not any(c.failed for c in self)

    def __repr__(self) -> str:
        failed = [c for c in self if c.failed]
        skipped = sum(c.skipped for c in self)
        tail = "all checks pass" if not failed else f"{len(failed)} of {len(self)} checks failed"
        if skipped:
            tail += f" ({skipped} skipped: nothing there to check)"
        return "\n".join([c.render() for c in self] + [tail])


def _ro(path: Path) -> sqlite3.Connection:
    return connect_read_only(path)


def check_tmux() -> Check:
    from relay_repl.core.errors import TmuxError
    from relay_repl.system.tmux import run as run_tmux
    from relay_repl.system.tmux import tmux_binary

    exe = tmux_binary()
    if exe is None:
        return Check(name="tmux", ok=False, detail="looked on PATH: `tmux` not found",
                     fix="install tmux (e.g. apt-get install tmux); typing into panes needs it")
    try:
        out = run_tmux((), "-V", timeout=10).text.strip()  # the one tmux runner; -V needs no server
    except TmuxError as exc:
        return Check(name="tmux", ok=False, detail=f"ran `{exe} -V`: no answer ({exc})", fix="reinstall tmux")
    if not out:
        return Check(name="tmux", ok=False, detail=f"ran `{exe} -V`: it printed nothing", fix="reinstall tmux")
    return Check(name="tmux", ok=True, detail=f"ran `{exe} -V`: {out}")


def check_client(kind: str) -> Check:
    from relay_repl.agents.versions import binary_version, pin, verified_here, version_status

    name = f"{kind} client"
    client = pin(kind)
    want, binary, install = client.version, client.binary, client.install_hint
    exe = shutil.which(binary)
    if exe is None:
        return Check(name=name, ok=False, detail=f"looked on PATH: `{binary}` not found",
                     fix=f"install it ({install}) or put its directory on PATH; or use the lab: "
                         f"`relay lab install`, then `relay --lab doctor`")
    have = binary_version(exe, kind=kind)
    if have is None:
        return Check(name=name, ok=False, detail=f"ran `{exe} --version`: no version in its answer",
                     fix=f"reinstall it ({install})")
    status = version_status(kind, have)
    if status == "unverified":
        return Check(name=name, ok=False, detail=f"ran `{exe} --version`: {have}, unverified (pinned: {want}; not "
                                                 f"verified on this machine)",
                     fix=f"verify it: `relay fidelity --clients system`; or {install}, or use the lab (`relay --lab`)")
    if status == "verified":
        when = verified_here(kind).get(have, {}).get("when", "?")
        return Check(name=name, ok=True, detail=f"ran `{exe} --version`: {have}, verified locally (on this machine, by "
                                                f"relay fidelity {when}; pinned is {want})")
    return Check(name=name, ok=True, detail=f"ran `{exe} --version`: {have}, pinned (the version relay ships verified)")


def check_state() -> list[Check]:
    import relay_repl.store.paths as paths

    out: list[Check] = []
    state = paths.state_dir(create=False)
    probe = state
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if os.access(probe, os.W_OK | os.X_OK):
        out.append(Check(name="state directory", ok=True,
                         detail=f"access(2) on {probe}: writable" + ("" if state.exists() else f" ({state} is created on "
                                                                                            "first use)")))
    else:
        out.append(Check(name="state directory", ok=False, detail=f"access(2) on {probe}: not writable",
                         fix="set RELAY_HOME to a directory you own"))
    ledger = paths.ledger_path() if state.exists() else state / "ledger.sqlite"
    if not ledger.exists():
        out.append(Check.skip("ledger integrity", f"no ledger at {ledger} yet (the first send creates it)"))
        out.append(Check(name="relay-halts", ok=True, detail=f"looked for {ledger}: none, so no halt is in force"))
        return out
    try:
        con = _ro(ledger)
        try:
            verdict = con.execute("PRAGMA integrity_check").fetchone()[0]
            halts = con.execute("SELECT reason, by FROM halts WHERE cleared IS NULL ORDER BY seq").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        out.append(Check(name="ledger integrity", ok=False, detail=f"opened {ledger} read-only: {exc}",
                         fix=f"move {ledger} aside (it keeps the history) and let relay start a new one"))
        return out
    out.append(Check(name="ledger integrity", ok=verdict == "ok", detail=f"ran PRAGMA integrity_check on {ledger}: {verdict}",
                     fix=None if verdict == "ok" else f"move {ledger} aside and let relay start a new one"))
    if halts:
        reason, by = halts[-1]
        out.append(Check(name="relay-halts", ok=False, detail=f"read its halts: {len(halts)} in force, newest: {reason} "
                                                            f"(by {by})",
                         fix="nothing is sent until it is cleared: handle the cause, then `relay unhalt` (`relay halts` lists them)"))
    else:
        out.append(Check(name="relay-halts", ok=True, detail="read its halts: none in force"))
    return out


def check_hosts_file() -> Check:
    """hosts.toml read as every command reads it (store/loader.py): absent, N hosts, or the one line
    that would stop `relay hosts`, `relay targets` and every send to a host."""
    from relay_repl.core.errors import FileProblem
    from relay_repl.store.hosts import hosts_file, load_hosts

    path = hosts_file()
    try:
        hosts = load_hosts(path)
    except FileProblem as exc:
        where = f" (line {exc.line})" if exc.line else ""
        return Check(name="hosts.toml", ok=False, detail=f"read {exc.path}: {exc.problem}{where}", fix=exc.fix)
    if not hosts:
        return Check(name="hosts.toml", ok=True, detail=f"looked for {path}: no hosts (`relay hosts add NAME DESTINATION`)")
    return Check(name="hosts.toml", ok=True, detail=f"read {path}: {len(hosts)} host(s): {', '.join(h.name for h in hosts)}")


async def run_checks() -> Report:
    """Every check, printed in layer order: system, clients, registries, state.

    They run concurrently: each only reads, none needs another's answer, and most of the time is
    spent waiting on a client process (`--version` of three clients, `claude agents --json`, the
    Codex daemon), so the command takes about as long as its slowest check, not their sum."""
    import anyio

    from relay_repl.agents.registry import kinds

    jobs: list[Callable[[], Awaitable[list[Check]]]] = [lambda: _in_thread(lambda: [check_tmux()])]
    jobs += [partial(_in_thread, partial(lambda kind: [check_client(kind)], k.facts.kind)) for k in kinds()]
    jobs += [partial(k.checks.doctor, os.environ) for k in kinds()]
    jobs.append(lambda: _in_thread(check_state))
    jobs.append(lambda: _in_thread(lambda: [check_hosts_file()]))
    results: list[list[Check]] = [[] for _ in jobs]

    async def run(i: int, job: Callable[[], Awaitable[list[Check]]]) -> None:
        results[i] = await job()

    async with anyio.create_task_group() as tg:
        for i, job in enumerate(jobs):
            tg.start_soon(run, i, job)
    return Report(c for group in results for c in group)


async def _in_thread(fn: Callable[[], list[Check]]) -> list[Check]:
    import anyio

    return await anyio.to_thread.run_sync(fn)
