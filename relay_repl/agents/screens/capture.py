"""The one tmux command line that takes a pane's `Snapshot`, and how its output is read back. Standard library only.

Why its own module: the tmux transport's preflight (transports/tmux.py `PaneIO.snapshot`) and a send's
plain pre-plan path (agents/gemini_cli/plain_plan.py, issue 40) must read a screen the same way, and
the plain path runs without pydantic, so the format cannot live in the transport module. The command
is `display-message FORMAT ; capture-pane -p ; display-message MARK ; capture-pane -p -e` on one pane:
tmux runs a `;`-chained list without redrawing in between, so the formats, the plain rows and the `-e`
rows describe the same screen. It chains after other commands (the listing's capture), which is how
one tmux process serves both a listing and a preflight look.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay_repl.agents.screens.model import Snapshot

SEP = "|:|"  # printable: tmux may print control characters as `_` (see system/pane_list.py)
FORMAT_FIELDS = ("pane_id", "cursor_x", "cursor_y", "pane_in_mode", "pane_mode", "alternate_on", "pane_pid",
                 "pane_dead", "pane_width", "pane_height", "pane_current_command")


def new_mark() -> str:
    """A marker no screen shows by chance (random), prefixing the command's two marker lines."""
    return "relaysnap" + os.urandom(6).hex()


def snapshot_args(pane_id: str, mark: str) -> list[str]:
    """The tmux arguments (one `;`-chained list) that snapshot `pane_id`; `read_snapshot` reads their output."""
    fmt = mark + "F" + SEP.join("#{%s}" % f for f in FORMAT_FIELDS)
    return ["display-message", "-p", "-t", pane_id, fmt, ";",
            "capture-pane", "-p", "-t", pane_id, ";",
            "display-message", "-p", "-t", pane_id, mark + "E", ";",
            "capture-pane", "-p", "-e", "-t", pane_id]


def snapshot_fields(out: list[str], mark: str) -> dict[str, Any] | None:
    """`Snapshot`'s fields from the output lines of `snapshot_args` (they may follow other output; the
    `-e` rows run to the end of `out`), or None when the marker lines are not there (an unreadable capture)."""
    try:
        i_f = next(i for i, ln in enumerate(out) if ln.startswith(mark + "F"))
        i_e = next(i for i, ln in enumerate(out) if ln == mark + "E")
    except StopIteration:
        return None
    # pane_current_command comes last and the split is bounded, so a `|:|` in it cannot shift fields
    vals = dict(zip(FORMAT_FIELDS, out[i_f][len(mark) + 1:].split(SEP, len(FORMAT_FIELDS) - 1)))
    height = int(vals.get("pane_height") or 0) or None

    def rows(chunk: list[str]) -> list[str]:
        if height is None:
            return chunk
        return (chunk + [""] * height)[:height]

    def num(key: str) -> int:
        v = vals.get(key, "")
        return int(v) if v.strip().lstrip("-").isdigit() else 0

    return {"lines": rows(out[i_f + 1:i_e]), "esc_lines": rows(out[i_e + 1:]),
            "cursor_x": num("cursor_x"), "cursor_y": num("cursor_y"),
            "pane_in_mode": vals.get("pane_in_mode") == "1", "pane_mode": vals.get("pane_mode", ""),
            "alternate_on": vals.get("alternate_on") == "1", "pane_current_command": vals.get("pane_current_command", ""),
            "pane_pid": num("pane_pid") or None, "pane_dead": vals.get("pane_dead") == "1",
            "pane_width": num("pane_width") or None, "pane_height": height, "pane_id": vals.get("pane_id")}


def read_snapshot(out: list[str], mark: str) -> Snapshot | None:
    """The `Snapshot` the output of `snapshot_args` holds, or None (unreadable)."""
    fields = snapshot_fields(out, mark)
    if fields is None:
        return None
    from relay_repl.system.prefetch import sibling

    return sibling(__name__, "relay_repl.agents.screens.model").Snapshot(**fields)


def capture_with_snapshots(panes: list[Any], env: Any) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], dict[str, Any]]]:
    """A listing's capture of `panes` (system/pane_list.capture_panes: the `-J` text of each, by `key`)
    and each pane's snapshot fields (`snapshot_fields`), in ONE tmux process per server.

    Why one: a send's plain plan reads a pane twice before its plan, once to identify the session (the
    footer names it) and once for preflight's look (formats, rows, `-e` rows); chained in one tmux
    command list the two come from the same screen and cost one spawn instead of two (issue 40). Each
    pane's part is the listing's `display-message MARK; capture-pane -p -J` followed by `snapshot_args`,
    so the `-J` text is exactly what the listing alone reads. A pane that vanished fails the chain: then
    one pane at a time, as capture_panes does; a pane whose part cannot be read has no snapshot."""
    from relay_repl.system.pane_list import capture_args, run_tmux, split_captures, which

    texts: dict[tuple[str, str], str] = {}
    snaps: dict[tuple[str, str], dict[str, Any]] = {}
    if which("tmux", env.get("PATH")) is None or not panes:
        return texts, snaps
    by_server: dict[str, list[Any]] = {}
    for p in panes:
        by_server.setdefault(p.socket_path, []).append(p)
    for sock, group in by_server.items():
        marker, mark = "relaycap" + os.urandom(6).hex(), new_mark()
        args: list[str] = []
        for p in group:
            args += [*([";"] if args else []), *capture_args([p.pane_id], marker), ";", *snapshot_args(p.pane_id, mark)]
        out = run_tmux(sock, args, env)
        if out is None and len(group) > 1:
            for p in group:
                more_texts, more_snaps = capture_with_snapshots([p], env)
                texts.update(more_texts)
                snaps.update(more_snaps)
            continue
        for pane_id, chunk in split_captures(out or "", marker).items():
            lines = chunk.split("\n")
            cut = next((i for i, ln in enumerate(lines) if ln.startswith(mark + "F")), len(lines))
            texts[(sock, pane_id)] = "\n".join(lines[:cut]).rstrip("\n")
            fields = snapshot_fields(lines[cut:], mark)
            if fields is not None:
                snaps[(sock, pane_id)] = fields
    return texts, snaps
