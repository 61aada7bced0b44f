"""Lab sessions of any registered agent kind, started, waited for and refreshed through the kind's own
lab driver (agents/kind.py: `lab_driver()` -> `LabDriver`: `spec`, `files`, `launch`, `wait`, `refresh`, ...).

Why: a kind installed beside relay_repl (or added as a package) says how the lab runs it offline,
and the lab asks it, so adding a kind changes nothing here. Every kind goes through this module; the
lab's own modules name none.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from relay_repl.agents.kind import AgentKind, LabContext, LabDriver, LabLaunch, LabReady
from relay_repl.agents.registry import kind_for
from relay_repl.agents.screens.model import ScreenReading
from relay_repl.core.errors import LabError
from relay_repl.system.polling import poll_until_sync
from relay_repl.lab import procs
from relay_repl.lab.labenv import Progress
from relay_repl.lab.layout import LAB_API_KEY, Layout, driver, lab_kinds
from relay_repl.lab.panes import capture, fail_dead, pane_info, read_screen, tail, tmux
from relay_repl.lab.state import LabSession, LabState

__all__ = ["lab_kinds", "count_flags", "default_counts", "driver", "own_kind", "context", "write_files", "launch", "resume",
           "wait_ready", "refresh", "PaneOps", "record", "apply"]


def count_flags() -> dict[str, AgentKind]:
    """`relay lab up --<flag> N`: each lab kind's count flag, as its package names it."""
    out: dict[str, AgentKind] = {}
    for k in lab_kinds():
        out[driver(k).spec.count_flag] = k
    return out


def default_counts() -> dict[str, int]:
    """{kind: sessions `relay lab up` starts when its flag is not given}."""
    return {k.facts.kind: driver(k).spec.default_count for k in lab_kinds()}


def own_kind(kind: str) -> LabDriver:
    """How the lab runs the registered kind of a lab session (its `lab_driver()`)."""
    k = kind_for(kind)
    d = k.lab_driver() if k is not None else None
    if d is None:
        raise LabError(f"no registered agent kind {kind!r} says how the lab runs it")
    return d


def context(lay: Layout, state: LabState | None, bin_dir: Path, mcp_command: Sequence[str],
            mcp_env: Mapping[str, str], env: Mapping[str, str], run_prefix: Sequence[str] = ()) -> LabContext:
    """What the lab tells a kind about itself (paths, the fake key, `relay mcp`, stub ports, env)."""
    return LabContext(root=lay.root, home=lay.home, bin_dir=bin_dir, logs=lay.logs, api_key=LAB_API_KEY,
                      mcp_command=tuple(mcp_command), mcp_env=dict(mcp_env), env=dict(env),
                      run_prefix=tuple(run_prefix),
                      base_urls={n: s.base_url for n, s in state.stub.sessions.items()} if state else {})


def write_files(ctx: LabContext, names_by_kind: Mapping[str, list[str]]) -> None:
    """Each kind's config files, written (0600: they name the lab's key and ports) before any of its
    sessions starts."""
    for kind, names in names_by_kind.items():
        for path, text in own_kind(kind).files(ctx, names).items():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.write_text(text)
            path.chmod(0o600)


def _first(state: LabState, s: LabSession) -> bool:
    same = state.of_kind(s.kind)
    return bool(same) and s is same[0]


def launch(ctx: LabContext, state: LabState, s: LabSession) -> LabLaunch:
    """The command and environment of `s`'s first start (`first`: the first of its kind)."""
    return own_kind(s.kind).launch(ctx, s.name, first=_first(state, s))


def resume(ctx: LabContext, state: LabState, s: LabSession) -> LabLaunch:
    """The command and environment that restart dead session `s` (its kind may resume its conversation)."""
    return own_kind(s.kind).resume(ctx, s.name, first=_first(state, s), prior=record(s))


def record(s: LabSession) -> LabReady:
    """What the lab recorded of `s`, as its kind's hooks read it."""
    return s.as_ready()


def apply(s: LabSession, r: LabReady) -> None:
    """Record what a kind's hook found of `s`."""
    s.pid = r.pid
    s.proc_start = r.proc_start
    s.session_id = r.address
    s.transcript = r.evidence_file
    s.facts = dict(r.facts)
    s.name = r.name or s.name
    s.alive = r.alive


class PaneOps:
    """`agents.kind.LabOps` on one lab session's pane: what a kind may do while it waits."""

    def __init__(self, lay: Layout, s: LabSession, progress: Progress):
        self._lay, self._s, self._progress = lay, s, progress
        self.name = s.name

    def pane(self) -> tuple[str, int]:
        info = pane_info(self._lay, self._s)
        fail_dead(self._lay, self._s, info)
        assert info is not None
        self._s.pane_id, self._s.pane_pid = info["pane_id"], int(info["pane_pid"])
        return self._s.pane_id, self._s.pane_pid

    def capture(self) -> str:
        return capture(self._lay, self._s.tmux_session)

    def reading(self) -> ScreenReading | None:
        return read_screen(self._lay, self._s.kind, self._s.tmux_session)

    def keys(self, *keys: str, literal: bool = False) -> None:
        tmux(self._lay, "send-keys", "-t", self._s.tmux_session, *(["-l"] if literal else []), *keys)

    def progress(self, line: str) -> None:
        self._progress(line)


def wait_ready(lay: Layout, ctx: LabContext, s: LabSession, started: LabLaunch, deadline: float,
               progress: Progress) -> None:
    """Wait until the kind says `s` (just started with `started`) is ready (`LabDriver.wait`), then record it."""
    ready = own_kind(s.kind).wait(ctx, s.name, started, PaneOps(lay, s, progress), deadline)
    if ready.focus_in:
        focus(lay, s, deadline)
    s.pid = ready.pid if ready.pid is not None else s.pane_pid
    s.proc_start = ready.proc_start or procs.proc_start(s.pid)
    s.session_id = ready.address or s.session_id
    s.transcript = ready.evidence_file or s.transcript
    s.facts = {**s.facts, **{k: v or s.facts.get(k) for k, v in ready.facts.items()}}
    s.alive = s.ready = True
    progress(f"  {s.name}: {ready.note or f'{s.kind} pid {s.pid} ready'}")


def focus(lay: Layout, s: LabSession, deadline: float) -> None:
    """Send the pane a focus-in report (ESC [ I, one write) and wait until the product's own
    reading of it (the kind's classifier, cursor included) says relay may type there."""
    pane = s.pane_id or s.tmux_session
    tmux(lay, "send-keys", "-H", "-t", pane, "1b", "5b", "49")

    def typable() -> bool | None:
        reading = read_screen(lay, s.kind, pane)
        return True if reading is not None and reading.typable else None

    if poll_until_sync(typable, timeout=max(1.0, min(15.0, deadline - time.monotonic())), interval=0.1) is None:
        raise LabError(f"{s.name}: {s.kind} still not typable after a focus-in report; screen: "
                       f"{tail(capture(lay, s.tmux_session))}")


def refresh(ctx: LabContext, s: LabSession, info: Mapping[str, str]) -> None:
    """Liveness of a session now, as its kind reads it (its pane, its process, its own records)."""
    s.pane_id, s.pane_pid = info["pane_id"], int(info["pane_pid"])
    k = kind_for(s.kind)
    if k is None:  # a lab.json of a kind no longer registered: nothing here can read it
        s.alive = False
        return
    apply(s, driver(k).refresh(ctx, record(s), s.pane_pid, info["dead"] == "1"))


def lab_counts(flags: Mapping[str, int], more: Mapping[str, int] | None = None) -> dict[str, int]:
    """{kind: count}: each lab kind's default (its LabSpec), then the count flags given (`claude=2`,
    as `relay lab up --claude 2`), then `more` ({kind: count})."""
    counts = default_counts()
    by_flag = count_flags()
    for flag, n in flags.items():
        if flag not in by_flag:
            raise LabError(f"no lab kind counts its sessions with {flag!r}; the lab's are {', '.join(sorted(by_flag))}")
        counts[by_flag[flag].facts.kind] = n
    counts.update(more or {})
    return counts
