"""Fidelity checks: discovery against the real clients, in a lab with every kind's sessions (its
fidelity module's `LAB_COUNTS["discovery"]`: Claude alpha and beta, Codex gamma and delta, Gemini epsilon).

Package code, not a test file, so `relay fidelity` runs them from an installed wheel; the live
tests (tests/agents/test_discovery_live.py) call these same functions, and use the helpers
here for their other checks. What a check stages itself (typing into lab panes, calling a
client's own API) is setup, not the code under test: discovery itself only reads. A check
raises AssertionError when its fact does not hold (the runner refuses `python -O`).

What each kind's sessions must show is its own (agents/<kind>/fidelity.py: `listed`,
`busy_detail`, `idle_detail`, and `DISCOVERY_CHECKS` for the facts only it has); the checks here
iterate the kinds the running lab has sessions of and never name one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio

import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
from relay_repl.lab.fidelity.kinds import kind_checks
from relay_repl.agents import default_providers, registry
from relay_repl.core.target import Target
from relay_repl.system.polling import poll_until
from relay_repl.lab.install import bin_dir
from relay_repl.lab.layout import Layout, driver

def lab_env() -> dict[str, str]:
    env = launcher.env()
    env["HOME"] = str(launcher.layout().home)
    return env


async def discover(env: dict[str, str] | None = None) -> list[Target]:
    out: list[Target] = []
    for p in default_providers(env or lab_env()):
        out += await p.discover()
    return out


def one(targets: list[Target], spec: str, live: bool = True) -> Target:
    hits = [t for t in targets if t.spec == spec and t.live == live]
    assert len(hits) == 1, f"{spec}: {hits} in {targets}"
    return hits[0]


async def until(fn: Any, timeout: float = 20.0, every: float = 0.2) -> Any:
    """Re-run `fn` (async) until it returns a truthy value; return that value."""
    last: Any = None

    async def check() -> Any:
        nonlocal last
        last = await fn()
        return last or None

    got = await poll_until(check, timeout=timeout, interval=every)
    if got is None:
        raise AssertionError(f"condition not met within {timeout:g}s (last: {last!r})")
    return got


def lab_tmux(*args: str) -> subprocess.CompletedProcess[str]:
    """Run tmux against the lab server with the lab's environment (as the launcher does)."""
    lay = launcher.layout()
    extra = [os.path.dirname(p) for p in (shutil.which("node"), shutil.which("git")) if p]
    return subprocess.run(["tmux", "-L", lay.tmux_socket, "-f", "/dev/null", *args],
                          env=lay.base_env(bin_dir(), extra), capture_output=True, text=True, check=True, timeout=15)


def pane_pid_of(tmux_session: str) -> tuple[str, int]:
    out = lab_tmux("display-message", "-p", "-t", f"={tmux_session}:", "#{pane_id} #{pane_pid}").stdout.split()
    return out[0], int(out[1])


async def states(*want: tuple[str, str]) -> list[Target] | None:
    ts = await discover()
    return ts if all(one(ts, spec).state == state for spec, state in want) else None


async def with_pane(spec: str) -> Target | None:
    t = one(await discover(), spec)
    return t if t.pane else None


class LabView:
    """The running lab as a kind's own discovery checks see it (`agents.fidelity.FidelityLab`)."""

    def status(self) -> Any:
        st = launcher.status()
        assert st is not None, "no lab"
        return st

    async def discover(self) -> list[Target]:
        return await discover()

    def one(self, targets: list[Target], spec: str, live: bool = True) -> Target:
        return one(targets, spec, live)

    async def until(self, fn: Callable[[], Awaitable[Any]], timeout: float = 20.0) -> Any:
        return await until(fn, timeout=timeout)

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return lab_tmux(*args)

    def pane_pid_of(self, tmux_session: str) -> tuple[str, int]:
        return pane_pid_of(tmux_session)

    def launch_command(self, name: str, first: bool) -> list[str]:
        from relay_repl.lab.client_setup import lab_context

        st = self.status()
        s = st.session(name)
        k = registry.kind_for(s.kind)
        assert k is not None, s.kind
        return driver(k).launch(lab_context(launcher.layout(), st, bin_dir()), name, first).argv()

    def launch_env(self, name: str) -> dict[str, str]:
        from relay_repl.lab.client_setup import launch_command

        st = self.status()
        return launch_command(launcher.layout(), st, st.session(name), bin_dir())[1]

    def client_env(self) -> dict[str, str]:
        lay = launcher.layout()
        extra = [os.path.dirname(p) for p in (shutil.which("node"), shutil.which("git")) if p]
        return {**lay.base_env(bin_dir(), extra), **lab_env()}

    def bin_dir(self) -> Path:
        return bin_dir()

    def home(self) -> Path:
        return launcher.layout().home

    def layout(self) -> Layout:
        return launcher.layout()

    def rename(self, name: str, new_name: str) -> None:
        helpers.rename_session(name, new_name)

    async def wait_idle(self, name: str, timeout: float = 60.0) -> None:
        await anyio.to_thread.run_sync(helpers.wait_idle, name, timeout)


def sessions_by_kind() -> list[tuple[ModuleType, list[Any]]]:
    """(fidelity module, its lab sessions) for every kind the running lab has sessions of."""
    st = launcher.status()
    assert st is not None, "no lab"
    out = []
    for k in registry.kinds():
        mine, mod = st.of_kind(k.facts.kind), k.checks.fidelity()
        if mine and mod is not None:
            out.append((mod, mine))
    return out


# -- the checks ---------------------------------------------------------------------------------------


async def every_kind_listed_idle_with_its_panes_and_transports() -> None:
    st = launcher.status()
    assert st is not None, "no lab"
    ts = await discover()
    for mod, mine in sessions_by_kind():
        for s in mine:
            k = registry.kind_for(s.kind)
            assert k is not None
            t = one(ts, f"{k.facts.prefix}:{s.name}")
            assert (t.kind, t.pane, t.state) == (s.kind, s.pane_id, "idle"), t
            # the version is the running binary's (pinned in CI; the candidate under `relay fidelity`)
            assert t.client_version == st.versions[s.kind], (t.client_version, st.versions)
            assert t.client_status in ("pinned", "verified"), t.client_status
            mod.listed(t, s, st.versions[s.kind])


async def busy_while_a_slow_turn_runs() -> None:
    # one session of each kind turns busy, all together (one after the other, a slow Codex start-up
    # on a loaded machine used up Claude's hold before discovery ran), and discovery is asked until
    # it sees them busy: a registry record or a daemon catches up with the screen a little later
    groups = sessions_by_kind()
    busy = [(mod, mine[0]) for mod, mine in groups]
    specs = {s.name: f"{registry.kind_for(s.kind).facts.prefix}:{s.name}" for _, s in busy}  # type: ignore[union-attr]
    async with anyio.create_task_group() as tg:
        for _, s in busy:
            tg.start_soon(_make_busy, s.name, 12.0)
    ts = await until(lambda: states(*[(spec, "busy") for spec in specs.values()]), timeout=10)
    for mod, s in busy:
        mod.busy_detail(one(ts, specs[s.name]))
    for _mod, mine in groups:
        for s in mine[1:]:
            t = one(ts, f"{registry.kind_for(s.kind).facts.prefix}:{s.name}")  # type: ignore[union-attr]
            assert t.state == "idle", t
    for _, s in busy:  # busy was seen: end the held turns rather than sit out their 12 s
        await anyio.to_thread.run_sync(helpers.end_busy, s.name, 60)
    ts = await until(lambda: states(*[(spec, "idle") for spec in specs.values()]))
    for mod, s in busy:
        mod.idle_detail(one(ts, specs[s.name]))  # e.g. the turn wrote the record discovery points at


async def _make_busy(name: str, seconds: float) -> None:
    await anyio.to_thread.run_sync(helpers.make_busy, name, seconds)


def _own(kind_check: Callable[[Any], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    return lambda: kind_check(LabView())


CHECKS = {
    "every_kind_listed_idle_with_its_panes_and_transports": every_kind_listed_idle_with_its_panes_and_transports,
    "busy_while_a_slow_turn_runs": busy_while_a_slow_turn_runs,
    **kind_checks("DISCOVERY_CHECKS", _own),
}
