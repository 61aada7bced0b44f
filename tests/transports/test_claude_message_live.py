"""Live: what the operator approves for the Claude socket transports is what is written,
and they never replace a file they did not create (issue 11, item 7)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

import relay_repl.agents.claude_code.lab as claude_lab
import relay_repl.lab.helpers as helpers
from relay_repl.lab.fidelity import native as checks
from relay_repl.core.delivery import DeliveryState
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]

CLAUDE = "claude:alpha"


async def wait_idle(name: str) -> None:
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(name, timeout=60))


async def test_message_plan_shows_the_wrapper_that_is_written_and_recorded(lab):
    await checks.CHECKS["message_plan_shows_the_wrapper_that_is_written_and_recorded"]()


async def test_socket_plan_names_its_listener_and_never_replaces_a_file_there(lab):
    target_dir = Path(claude_lab.lab_facts(lab.session("alpha")).messaging_socket or "").parent
    squatter = target_dir / f"{os.getpid()}.sock"
    assert not squatter.exists()
    squatter.write_text("not relay's\n")
    try:
        async with live_session([True, True]) as (s, gate, inbox):
            d = await s.send(CLAUDE, "receipts go to a fresh name", transport="claude-code-socket", timeout=30)
            assert d.state is DeliveryState.IN_TURN, d.summary()
            plan = gate.shown[-1]
            (created,) = plan.files
            fresh = Path(created.split()[1].rstrip(":"))
            assert fresh.parent == target_dir and fresh.name.startswith(f"{os.getpid()}-") and fresh != squatter
            assert fresh.is_socket() and squatter.read_text() == "not relay's\n"
            write = next(e for e in d.evidence if e.stage == "write")
            assert write.data["reply_to"] == str(fresh) and write.data["content"] == plan.payload
            assert plan.payload.startswith("[relay/1 ")  # no wrapper on the raw socket transport
            # the listener exists now: a second plan creates nothing
            again = await s.send(CLAUDE, "second, same listener", transport="claude-code-socket", timeout=30)
            assert again.state is DeliveryState.IN_TURN, again.summary()
            assert gate.shown[-1].files == ()
        assert not fresh.exists()  # ours: removed on exit
        assert squatter.read_text() == "not relay's\n"  # not ours: never touched
    finally:
        squatter.unlink(missing_ok=True)
    await wait_idle("alpha")
