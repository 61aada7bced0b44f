"""Reading `relay watch` in a tmux pane while something else writes the ledger: when each
ledger event (`#SEQ hh:mm:ss.mmm ...`) and inbox message (`inbox #N ...`) first showed."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

EVENT = re.compile(r"(?<![\w#])#(\d+) \d\d:\d\d:\d\d\.\d{3} ")
INBOX = re.compile(r"inbox #(\d+) \d\d:\d\d:\d\d\.\d{3} ")
HELD = re.compile(r"^[> ] (\S+) \d\d:\d\d:\d\d\.\d{3} from \S+ \[", re.M)  # a held request's line


class ScreenLog:
    """Captures `pane` every `interval` s in a thread; `events[seq]` / `inbox[n]` is when each first showed."""

    def __init__(self, pane: Any, interval: float = 0.05, look_for: tuple[str, ...] = ()) -> None:
        self.pane = pane
        self.look_for = look_for
        self.found: dict[str, float] = {}  # each of `look_for`: when a capture first held it
        self.forbidden_seen: list[str] = []  # captures holding a raw bidi override or escape
        self.interval = interval
        self.events: dict[int, float] = {}
        self.inbox: dict[int, float] = {}
        self.held: dict[str, float] = {}  # each request id: when it first showed among the held requests
        self.last = ""
        self.captures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                text = "\n".join(self.pane.capture_pane())
            except Exception:
                text = ""
            now = time.time()
            self.captures += 1
            self.last = text
            for want in self.look_for:
                if want in text:
                    self.found.setdefault(want, now)
            if "\u202e" in text or "\x1b" in text:
                self.forbidden_seen.append(text)
            for m in HELD.finditer(text):
                self.held.setdefault(m.group(1), now)
            for m in INBOX.finditer(text):
                self.inbox.setdefault(int(m.group(1)), now)
            for m in EVENT.finditer(INBOX.sub("", text)):
                self.events.setdefault(int(m.group(1)), now)
            self._stop.wait(self.interval)

    def __enter__(self) -> ScreenLog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def late(self, ledger_events: list, inbox: list, bound: float) -> list[str]:
        """Every event and inbox message that showed more than `bound` s after it was written, or never."""
        out = []
        for e in ledger_events:
            seen = self.events.get(e.seq)
            if seen is None or seen - e.at > bound:
                out.append(f"event #{e.seq} {e.kind} {e.relay_id}: " + ("never shown" if seen is None else
                                                                     f"shown {seen - e.at:.2f}s after"))
        for m in inbox:
            seen = self.inbox.get(m.seq)
            if seen is None or seen - m.at > bound:
                out.append(f"inbox #{m.seq}: " + ("never shown" if seen is None else f"shown {seen - m.at:.2f}s after"))
        return out

    def delays(self, ledger_events: list, inbox: list) -> list[float]:
        got = [self.events[e.seq] - e.at for e in ledger_events if e.seq in self.events]
        return got + [self.inbox[m.seq] - m.at for m in inbox if m.seq in self.inbox]
