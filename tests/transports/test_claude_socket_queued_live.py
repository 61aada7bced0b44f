"""Live: the socket path reads a busy Claude's queue-operation enqueue as `queued` (issue 38).

alpha is held busy by the stub (a turn with no tool boundary); a message over its messaging socket
is held by Claude, which records a `queue-operation` `enqueue` of exactly the payload. Within a
short confirm window no turn takes it: relay reports `queued` from that record (on e6902ec:
`written, but no transcript record`), no further; once the held turn ends the message runs, and
its origin record makes it in_turn."""

from __future__ import annotations

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.core.delivery import DeliveryState
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]


async def test_a_busy_claude_holding_the_message_is_queued_not_missing(lab):
    async with live_session([True]) as (s, gate, _):
        await anyio.to_thread.run_sync(helpers.make_busy, "alpha", 20)
        try:
            await s.refresh()
            d = await s.send("claude:alpha", "held while busy", transport="claude-code-socket", timeout=4)
            transcript = [e for e in d.evidence if e.stage == "transcript"]
            assert d.state is DeliveryState.QUEUED, d.summary()
            assert [e.state for e in transcript] == [DeliveryState.QUEUED], d.evidence
            assert transcript[0].data["record"]["where"] == "queue-operation enqueue"
            assert transcript[0].data["record"]["content"] == d.plan.payload
            assert d.reason.startswith("queued: claude:alpha's transcript holds exactly this payload"), d.reason
        finally:
            await anyio.to_thread.run_sync(helpers.end_busy, "alpha")
        await anyio.to_thread.run_sync(helpers.wait_idle, "alpha", 60)
