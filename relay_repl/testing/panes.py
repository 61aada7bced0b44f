"""The pane I/O double: a `PaneIO` whose screen is a script of recorded captures.

Why it ships: the tmux transport does all its I/O through `PaneIO` (snapshot, send_literal,
send_key), so a transport or agent-kind package can run the real `TmuxTransport` state machine
over its client's recorded screens, key by key, with no tmux server. Every key it takes must
carry the approval the real seam requires (`core.approval.check`), so a double never lets a
test press what the gate did not approve.
"""

from __future__ import annotations

from typing import Any

from relay_repl.agents.screens.model import Snapshot
from relay_repl.core.approval import check
from relay_repl.core.target import Target
from relay_repl.transports.tmux import PaneIO, PaneRef


class ReplayIO(PaneIO):
    """A PaneIO whose screen is a script: `on_literal` / `on_enter` switch the replayed capture."""

    def __init__(self, first: Snapshot, on_literal: Snapshot | None = None, on_enter: Snapshot | None = None,
                 on_tab: Snapshot | None = None, argv: list[str] | None = None) -> None:
        super().__init__({})
        self.screen, self.on_literal, self.on_enter, self.on_tab = first, on_literal, on_enter, on_tab
        self.keys: list[tuple[str, str]] = []
        self.argv = argv or ["claude"]

    def locate(self, target: Target) -> PaneRef | None:
        return PaneRef(socket_path="/nonexistent/replay", pane_id=target.pane or "%0")

    def snapshot(self, pane: PaneRef) -> Snapshot:
        return self.screen

    def processes(self, root: int) -> list[tuple[int, list[str]]]:
        return [(root, self.argv)]

    def send_literal(self, pane: PaneRef, text: str, approval: Any = None, part: tuple[int, int] | None = None) -> None:
        check(approval, what="replayed literal", transport="tmux", payload=text, pane=pane.pane_id)
        self.keys.append(("literal", text if part is None else text[part[0]:part[1]]))  # as the real seam types it
        if self.on_literal is not None:
            self.screen = self.on_literal

    def send_key(self, pane: PaneRef, key: str, approval: Any = None) -> None:
        assert key in ("Enter", "Tab")
        check(approval, what="replayed key", transport="tmux", pane=pane.pane_id)
        self.keys.append(("key", key))
        nxt = {"Enter": self.on_enter, "Tab": self.on_tab}[key]
        if nxt is not None:
            self.screen = nxt
