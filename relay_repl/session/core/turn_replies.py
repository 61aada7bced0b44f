"""Waiting for a turn reply: the receiver's own final message in the turn our message started.

The session asks the target's agent module for a watcher (agents.replies.turn_watch),
then polls it without blocking the REPL (file reads run in a worker thread), showing
progress on long waits. What it finds is recorded in the ledger under the delivery's
relay id (`turn-reply`), so `why(id)` shows the answer beside the send.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from relay_repl.system.polling import poll_until

from relay_repl.agents.replies import turn_watch
from relay_repl.agents.turn_reply import TurnReply
from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import LoopHalt, UsageError
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger

POLL = 0.1
PROGRESS_EVERY = 5.0


async def wait_turn_reply(
    delivery: Delivery,
    target: Target,
    ledger: Ledger,
    timeout: float,
    *,
    echo: Callable[[str], None] | None = None,
    stop: Callable[[], Any] | None = None,
) -> TurnReply | None:
    """The turn's outcome (answered, no final message, aborted), or None after `timeout`.

    `stop()` returning truthy ends the wait early (the session passes "a reply already
    came by another route"); a relay-halt in force ends it with LoopHalt.
    """
    if delivery.outcome != "delivered":
        raise UsageError(f"{delivery.relay_id} is {delivery.outcome} ({delivery.state.value}): there is no turn to "
                         "read a reply from until it is delivered")
    watch = turn_watch(target, delivery)
    if watch is None:
        raise UsageError(f"no turn record of {target.spec} to read a reply from (no transcript or rollout known, "
                         "or no id tying the turn to our message)")
    say = echo or (lambda s: None)
    stopped = object()  # `stop()` said so: no reply by this route, and no timeout either

    async def check() -> TurnReply | object | None:
        found = await anyio.to_thread.run_sync(watch.poll)
        if found is not None:
            ledger.event("turn-reply", delivery=delivery.key, relay_id=delivery.relay_id,
                         data={**found.model_dump(), "target": target.spec})
            delivery.extra.turn_reply = found
            return found
        halt = ledger.active_halt()
        if halt:
            raise LoopHalt(f"relay-halt is in force ({halt.reason}): stopped waiting for {delivery.relay_id}'s turn reply")
        if stop is not None and stop():
            return stopped
        return None

    def progress(left: float) -> None:
        say(f"waiting for {target.spec}'s turn to end ({timeout - left:.0f}s of {timeout:.0f}s; reading {watch.source})")

    result = await poll_until(check, timeout=timeout, interval=POLL, progress=progress, progress_every=PROGRESS_EVERY)
    if result is None:
        ledger.event("turn-reply-timeout", delivery=delivery.key, relay_id=delivery.relay_id,
                     data={"source": str(watch.source), "timeout": timeout})
        return None
    return result if isinstance(result, TurnReply) else None
