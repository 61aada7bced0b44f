"""Lab sessions of any registered agent kind, started through the kind's own lab pieces.

Why: a kind installed beside relay_repl (or added as a package) says how the lab runs it
offline (`AgentKind.lab()`: its count flag and stub API; `lab_files`, `lab_launch`,
`lab_ready`), and the lab asks it, so adding a kind changes nothing here. Claude Code and
Codex still start through the lab's own older sequence (startup.py: the Codex daemon, thread
renames, shell snapshots); every other lab kind goes through this module.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from relay_repl.agents.kind import AgentKind, LabContext, LabLaunch, LabPane, LabReady
from relay_repl.agents.registry import kind_for, kinds
from relay_repl.core.errors import LabError
from relay_repl.system.polling import poll_until_sync
from relay_repl.lab import procs
from relay_repl.lab.labenv import Progress
from relay_repl.lab.layout import LAB_API_KEY, Layout
from relay_repl.lab.panes import capture, fail_dead, pane_info, read_screen, tail, tmux
from relay_repl.lab.state import LabSession, LabState


def lab_kinds() -> list[AgentKind]:
    """Every registered kind the lab can run offline (its package says how), in name order."""
    return [k for k in kinds() if k.lab() is not None]


def count_flags() -> dict[str, AgentKind]:
    """`relay lab up --<flag> N`: each lab kind's count flag, as its package names it."""
    out: dict[str, AgentKind] = {}
    for k in lab_kinds():
        spec = k.lab()
        assert spec is not None
        out[spec.count_flag] = k
    return out


def default_counts() -> dict[str, int]:
    """{kind: sessions `relay lab up` starts when its flag is not given}."""
    return {k.kind: k.lab().default_count for k in lab_kinds()}  # type: ignore[union-attr]


def own_kind(kind: str) -> AgentKind:
    """The kind of a lab session that starts through its own lab pieces."""
    k = kind_for(kind)
    if k is None or k.lab() is None:
        raise LabError(f"no registered agent kind {kind!r} says how the lab runs it")
    return k


def context(lay: Layout, state: LabState, bin_dir: Path, mcp_command: Sequence[str],
            mcp_env: Mapping[str, str]) -> LabContext:
    """What the lab tells a kind about itself (paths, the fake key, `relay mcp`, stub ports)."""
    return LabContext(root=lay.root, home=lay.home, bin_dir=bin_dir, logs=lay.logs, api_key=LAB_API_KEY,
                      mcp_command=tuple(mcp_command), mcp_env=dict(mcp_env),
                      base_urls={n: s.base_url for n, s in state.stub.sessions.items()})


def write_files(ctx: LabContext, names_by_kind: Mapping[str, list[str]]) -> None:
    """Each kind's config files, written before any of its sessions starts."""
    for kind, names in names_by_kind.items():
        for path, text in own_kind(kind).lab_files(ctx, names).items():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.write_text(text)


def launch(ctx: LabContext, state: LabState, s: LabSession) -> LabLaunch:
    """The command and environment of `s` (first start and restarts alike)."""
    same = state.of_kind(s.kind)
    return own_kind(s.kind).lab_launch(ctx, s.name, first=bool(same) and s is same[0])


def wait_ready(lay: Layout, ctx: LabContext, s: LabSession, deadline: float, progress: Progress) -> None:
    """Poll the pane until the kind says its session is ready (`lab_ready`), or fail with its screen."""
    kind = own_kind(s.kind)

    def lab_ready() -> LabReady | None:
        info = pane_info(lay, s)
        fail_dead(lay, s, info)
        assert info is not None
        s.pane_id, s.pane_pid = info["pane_id"], int(info["pane_pid"])
        return kind.lab_ready(ctx, s.name, LabPane(pane_id=s.pane_id, pane_pid=s.pane_pid,
                                                   screen=capture(lay, s.tmux_session)))

    ready = poll_until_sync(lab_ready, timeout=deadline - time.monotonic(), interval=0.1)
    if ready is not None and ready.focus_in:
        focus(lay, s, deadline)
    if ready is not None:
        s.pid = ready.pid if ready.pid is not None else s.pane_pid
        s.proc_start = procs.proc_start(s.pid)
        s.session_id = ready.address or s.session_id
        s.transcript = ready.evidence_file or s.transcript
        s.alive = s.ready = True
        progress(f"  {s.name}: {ready.note or f'{s.kind} pid {s.pid} ready'}")
        return
    raise LabError(f"{s.name}: {s.kind} not ready before the deadline; screen: {tail(capture(lay, s.tmux_session))}")


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


def refresh(s: LabSession, info: Mapping[str, str]) -> None:
    """Liveness of a session started through its kind's pieces: its pane and its process."""
    s.pane_id, s.pane_pid = info["pane_id"], int(info["pane_pid"])
    s.alive = info["dead"] != "1" and procs.is_alive(s.pid, s.proc_start)
