"""What a lab Claude appends to its transcript after its turn reads idle, and when.

    .venv/bin/python -m bench.claude_late_writes [--turns 5] [--watch 20] [--target alpha|beta] [--keep FILE]

In a lab of its own (a temporary RELAY_HOME, unless RELAY_HOME already has a lab up: then
that one), each turn is driven the way tests/frontends/test_cli_readonly_live.py drives it:
a relay session sends one message to claude:alpha by `claude-code-socket`, then waits for
`helpers.wait_idle("alpha")` (the session's registry record says idle). Meanwhile one thread
polls the transcript every ~10 ms (size, mtime) and logs every new record's `type` (and
`subtype`, or `attachment.type`) with its time relative to the moment alpha first read idle
after the send; it keeps watching `--watch` seconds after that. The machine's load is
printed with every turn.

After the turn reads idle it also polls `transcript.turn_written` (every 10 ms) and marks any
record that lands after it said the turn was written as LATE; `--keep FILE` copies alpha's
transcript at the end, for the offline check of the metadata re-append.

Why: the read-only-commands test snapshots alpha's transcript once the turn reads idle and
failed once (two live workers, two CPU burners) because the transcript grew while `relay
verify` ran. This says which record came late, whether every turn writes it, and how late.

Measured 2026-12-02 (Claude Code 2.1.332; four runs, 61 turns, load 3-15 from other helpers'
live tests, three CPU burners in one run): in 6 turns the turn's final `assistant` record and its
`turn_duration` landed after alpha first read idle (0.03-0.11 s; 100 ms write timer), once
followed 10 ms later by a metadata re-append block (`last-prompt`, ...), which comes after the
write that brings the bytes since the last block to 32 KiB (every ~7 turns here). No record
landed after `turn_written` said the turn was written (0 LATE in 37 turns); nothing else came
within 2-15 s of a turn. adapters/claude-code.md (Gaps) has the details.
`--target beta` (Codex 0.171.0 by codex-queue, its rollout; 8 turns, load 10-11): every record
of the turn, `task_complete` last, was in the rollout before beta's screen first read idle, and
nothing came in the 5 s after.
"""

from __future__ import annotations

import argparse
import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any


def _kind(rec: dict[str, Any]) -> str:
    t = str(rec.get("type"))
    if isinstance(rec.get("payload"), dict):  # a Codex rollout line
        return f"{t}/{rec['payload'].get('type')}"
    sub = rec.get("subtype") or (rec.get("attachment") or {}).get("type") if isinstance(rec, dict) else None
    if t == "assistant":
        msg = rec.get("message") or {}
        stop = msg.get("stop_reason")
        kinds = ",".join(str(c.get("type")) for c in msg.get("content") or [] if isinstance(c, dict))
        return f"assistant[{kinds}] stop={stop}"
    if t == "user":
        msg = rec.get("message") or {}
        content = msg.get("content")
        kinds = "text" if isinstance(content, str) else ",".join(str(c.get("type")) for c in content or [] if isinstance(c, dict))
        return f"user[{kinds}]{' origin' if rec.get('origin') else ''}"
    return f"{t}/{sub}" if sub else t


class Watcher(threading.Thread):
    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0
        self.events: list[tuple[float, str, int]] = []  # (monotonic, kind, size after)
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        buf = b""
        while not self.stop.is_set():
            try:
                st = self.path.stat()
            except OSError:
                time.sleep(0.01)
                continue
            if st.st_size > self.offset:
                now = time.monotonic()
                with open(self.path, "rb") as fh:
                    fh.seek(self.offset)
                    data = fh.read(st.st_size - self.offset)
                self.offset += len(data)
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    try:
                        rec = json.loads(line)
                        kind = _kind(rec) if isinstance(rec, dict) else "?"
                    except ValueError:
                        kind = "<not json>"
                    with self.lock:
                        self.events.append((now, kind, self.offset))
            time.sleep(0.01)

    def take(self) -> list[tuple[float, str, int]]:
        with self.lock:
            out, self.events = self.events, []
        return out


TARGETS = {"alpha": ("claude:alpha", "claude-code-socket"), "beta": ("codex:beta", "codex-queue")}


async def _send(name: str, text: str) -> Any:
    from relay_repl.lab.sessions import live_session

    spec, transport = TARGETS[name]
    async with live_session([True]) as (s, _gate, _):
        return await s.send(spec, text, transport=transport, timeout=30)


def turn(i: int, watch: float, name: str = "alpha") -> list[str]:
    import anyio

    import relay_repl.lab.helpers as helpers
    import relay_repl.lab.launcher as launcher
    from relay_repl.agents.claude_code.transcript import turn_written

    st = launcher.status()
    assert st is not None
    alpha = next(x for x in st.sessions if x.name == name)
    path = Path(alpha.transcript or "")
    w = Watcher(path)
    w.start()
    t0 = time.monotonic()
    d = anyio.run(_send, name, f"a delivery for the read-only commands to read ({i})")
    t_sent = time.monotonic()
    # first idle after the send: poll as wait_idle does, but note the moment
    idle_at = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if helpers.is_idle(name):
            idle_at = time.monotonic()
            break
        time.sleep(0.02)
    assert idle_at is not None, f"{name} not idle after 60 s"
    written_at, proof = None, None
    while name == "alpha" and time.monotonic() < idle_at + 30:
        proof = turn_written(path, d.extra.msg_id or "")
        if proof:
            written_at = time.monotonic()
            break
        time.sleep(0.01)
    size_written = path.stat().st_size
    time.sleep(watch)
    w.stop.set()
    w.join()
    load = Path("/proc/loadavg").read_text().split()[0]
    out = [f"turn {i}: outcome={d.outcome} send returned +{t_sent - t0:.2f}s, idle at +{idle_at - t0:.2f}s "
           f"(times below relative to idle), load {load}"]
    if name == "alpha":
        out.append(f"  turn_written at {'never' if written_at is None else f'{written_at - idle_at:+.3f}s'}: {proof}")
    for at, kind, size in w.take():
        late = "  LATE: after turn_written" if written_at is not None and size > size_written else ""
        out.append(f"  {at - idle_at:+8.3f}s  {kind}  (size {size}){late}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--watch", type=float, default=20.0, help="seconds to keep watching after idle")
    ap.add_argument("--target", choices=sorted(TARGETS), default="alpha",
                    help="alpha (Claude, by claude-code-socket) or beta (Codex, by codex-queue; its rollout)")
    ap.add_argument("--keep", help="copy alpha's transcript here at the end")
    args = ap.parse_args()

    import relay_repl.lab.launcher as launcher
    from bench.lab import running_or_own_lab

    with running_or_own_lab("relay-bench-latewrites-"):
        for i in range(args.turns):
            print("\n".join(turn(i, args.watch, args.target)), flush=True)
        if args.keep:
            st = launcher.status()
            alpha = next(x for x in st.sessions if x.name == args.target) if st else None
            if alpha and alpha.transcript:
                shutil.copy(alpha.transcript, args.keep)

if __name__ == "__main__":
    main()
