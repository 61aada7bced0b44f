"""Reading `relay watch` in a tmux pane while something else writes the ledger: when each
ledger event (`#SEQ hh:mm:ss.mmm ...`) and inbox message (`inbox #N ...`) first showed.

Why every capture is kept (as a `Frame`: when, which seqs, how many event rows): an event that
never showed is judged from the captures around the moment it was written (was it drawn between
two captures and scrolled off, or never drawn at all?), and the failure says so."""

from __future__ import annotations

import re
import threading
import time
from typing import Any, NamedTuple

EVENT = re.compile(r"(?<![\w#])#(\d+) \d\d:\d\d:\d\d\.\d{3} ")
INBOX = re.compile(r"inbox #(\d+) \d\d:\d\d:\d\d\.\d{3} ")
HELD = re.compile(r"^[> ] (\S+) \d\d:\d\d:\d\d\.\d{3} from \S+ \[", re.M)  # a held request's line
EVENTS_HEAD = "EVENTS (newest last)"


class Frame(NamedTuple):
    """One capture: when it was asked and when it returned, the event seqs and inbox numbers on it
    (top to bottom), and how many rows the view's EVENTS section had."""

    asked: float
    at: float
    seqs: tuple[int, ...]
    inbox: tuple[int, ...]
    rows: int

    def brief(self, origin: float) -> str:
        span = f"#{self.seqs[0]}..#{self.seqs[-1]}" if self.seqs else "no events"
        return f"{self.at - origin:+.3f}s ({self.at - self.asked:.3f}s to take): {span}, {self.rows} event rows"


class ScreenLog:
    """Captures `pane` every `interval` s in a thread; `events[seq]` / `inbox[n]` is when each first showed.

    Leaving the block takes one more capture after the thread stopped: what the screen showed when
    the test stopped looking (a line the test's own wait saw, say) is seen by the log too."""

    def __init__(self, pane: Any, interval: float = 0.05, look_for: tuple[str, ...] = ()) -> None:
        self.pane = pane
        self.look_for = look_for
        self.found: dict[str, float] = {}  # each of `look_for`: when a capture first held it
        self.forbidden_seen: list[str] = []  # captures holding a raw bidi override or escape
        self.interval = interval
        self.events: dict[int, float] = {}
        self.inbox: dict[int, float] = {}
        self.held: dict[str, float] = {}  # each request id: when it first showed among the held requests
        self.frames: list[Frame] = []
        self.last = ""
        self.captures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def capture(self) -> None:
        """Take one capture and note what it shows."""
        asked = time.time()
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
        inbox = [int(m.group(1)) for m in INBOX.finditer(text)]
        for n in inbox:
            self.inbox.setdefault(n, now)
        seqs = [int(m.group(1)) for m in EVENT.finditer(INBOX.sub("", text))]
        for seq in seqs:
            self.events.setdefault(seq, now)
        rows = len(text.split(EVENTS_HEAD, 1)[1].strip("\n").splitlines()) if EVENTS_HEAD in text else 0
        self.frames.append(Frame(asked, now, tuple(seqs), tuple(inbox), rows))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.capture()
            self._stop.wait(self.interval)

    def __enter__(self) -> ScreenLog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.capture()

    def late(self, ledger_events: list, inbox: list, bound: float) -> list[str]:
        """Every event and inbox message that showed more than `bound` s after it was written, or never
        (an event never shown with the captures around it: `around`)."""
        out = []
        for e in ledger_events:
            seen = self.events.get(e.seq)
            if seen is None or seen - e.at > bound:
                out.append(f"event #{e.seq} {e.kind} {e.relay_id}: " + (
                    f"never shown; {self.around(e, ledger_events)}" if seen is None else
                    f"shown {seen - e.at:.2f}s after"))
        for m in inbox:
            seen = self.inbox.get(m.seq)
            if seen is None or seen - m.at > bound:
                out.append(f"inbox #{m.seq}: " + ("never shown" if seen is None else f"shown {seen - m.at:.2f}s after"))
        return out

    def around(self, e: Any, ledger_events: list, n: int = 3) -> str:
        """What the log knows about an event it never saw: the events written just before and after
        it (times from its own), and the captures from the last one before it was written to the
        `n`th after, each with the seqs it showed and its event rows."""
        i = next((k for k, x in enumerate(ledger_events) if x.seq == e.seq), 0)
        near = [f"#{x.seq} {x.kind} {x.at - e.at:+.3f}s" for x in ledger_events[max(0, i - 2): i + 3] if x is not e]
        before = [f for f in self.frames if f.at < e.at][-1:]
        after = [f for f in self.frames if f.at >= e.at][:n]
        frames = "; ".join(f.brief(e.at) for f in before + after) or "no capture after it"
        return (f"written {e.at:.3f} (beside {', '.join(near)}); {len(self.frames)} captures, around it: {frames}"
                + ("" if after else "; the log stopped before it was written"))

    def delays(self, ledger_events: list, inbox: list) -> list[float]:
        got = [self.events[e.seq] - e.at for e in ledger_events if e.seq in self.events]
        return got + [self.inbox[m.seq] - m.at for m in inbox if m.seq in self.inbox]
