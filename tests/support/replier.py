"""A fake replier for fast recipe tests: an in-memory transport whose receivers
answer the way the lab's agents do (an envelope into the operator's inbox,
`re=<id answered>`, hop + 1), through the real Inbox.accept (dedupe, halt)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import uuid

import anyio

from relay_repl.core.delivery import Delivery
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target
from relay_repl.session.core.inbox import Inbox
from relay_repl.transports.base import StageLog
from relay_repl.transports.fake import InMemoryTransport


def reply_line(target: str, n: int, answered: Envelope, text: str, tag: str = "") -> str:
    return (f"[relay/1 from=peer:fake@{target} to=operator id={target}{tag}-{n} hop={answered.hop + 1} want=none "
            f"re={answered.id}] {text}")


class Replier(InMemoryTransport):
    def __init__(self, inbox: Inbox, tg: Any = None, *, answer: Callable[[Envelope, Target], str | None] | None = None,
                 delay: float = 0.0, crash_after: int | None = None) -> None:
        super().__init__()
        self.inbox = inbox
        self.tg = tg
        self.answer = answer or (lambda env, t: f"{t.name} heard: {env.body[:40]}")
        self.delay = delay
        self.crash_after = crash_after
        self.log: list[tuple[str, str]] = []  # ("sent"|"answered", relay id), in order
        self.n = 0
        self.tag = "." + uuid.uuid4().hex[:6]  # reply ids unique across repliers, as the ledger makes them

    async def send(self, delivery: Delivery, target: Target, payload: str, log: StageLog, approval: Any = None) -> None:
        await super().send(delivery, target, payload, log, approval=approval)
        env = Envelope.parse(payload)
        assert env is not None
        self.log.append(("sent", env.id))
        if env.want == "none":
            return
        text = self.answer(env, target)
        if text is None or env.hop >= 4:
            if self.crash_after is not None and len(self.received) >= self.crash_after:
                raise SystemExit("simulated kill -9 mid-send")
            return
        self.n += 1
        line = reply_line(target.name, self.n, env, text, self.tag)
        if self.delay and self.tg is not None:
            async def later() -> None:
                await anyio.sleep(self.delay)
                self._accept(line, env)
            self.tg.start_soon(later)
        else:
            self._accept(line, env)
        if self.crash_after is not None and len(self.received) >= self.crash_after:
            raise SystemExit("simulated kill -9 mid-round")

    def _accept(self, line: str, env: Envelope) -> None:
        self.log.append(("answered", env.id))
        self.inbox.accept(line, {"verifiedPeerPid": 1, "kind": "peer"})
