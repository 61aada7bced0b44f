"""What Claude's and Codex's turn watches (agents/turn_reply.py `TurnWatch`) start from alike.

Why: both tail one JSONL file from its start (Claude's transcript, Codex's rollout) and match our
message by the id the client records with it (msg_id, the queue item's client_id) when there is
one, else by its exact text, and name that anchor in the reply they find. Each keeps its own
reading of the records; only this start is shared. Loaded with the watch, never on the cold
`relay targets` path (codex/rollout.py is on it, agents/turn_reply.py must not be).
"""

from __future__ import annotations

from pathlib import Path


class MatchedTail:
    """One JSONL file tailed (`source`, `_tail`) for the turn our message (`text`, or the id) started."""

    def __init__(self, source: Path | str, client: str, by_id: tuple[str, str | None], text: str | None,
                 by_text: str) -> None:
        """`by_id`: the id's name and value (None: match by `text`); `by_text`: the anchor's words then."""
        from relay_repl.agents.turn_reply import Tail

        name, value = by_id
        if not value and not text:
            raise ValueError(f"a {client} turn is matched by {name} or by the exact text")
        self.source = Path(source)
        self.text = text
        self._anchor = f"{name} {value}" if value else by_text
        self._tail = Tail(self.source)

    @property
    def anchor(self) -> str:
        """What tied the turn to our message, as the reply says it (`TurnReply.anchor`)."""
        return self._anchor
