"""Live: the Session API with HOST/ specs through `relay lab up --hosts 2`.

`await session.send("h2/claude:alpha", ..., want="reply")` is planned by the second host's
relay, shown to THIS session's gate with its route and host key, carried out there against
the host's real Claude Code; `d.wait_reply()` brings back the answer judged on that host
(`host h2 says: verified by pid P`). `session.run("five-rounds", ...)` runs unchanged
between a local agent and a remote one; `session.halt()` reaches the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.test_hosts_live import lab2, lab_home  # noqa: F401 - the lab plus its second host
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio, pytest.mark.timeout(900)]

YES = [True] * 40


@pytest.mark.parametrize("target", ["h2/claude:alpha", "h2/codex:beta"])
async def test_session_send_to_a_host_and_wait_reply_verified_there(lab2, target):  # noqa: F811
    from relay_repl.store.ledger import Ledger

    async with live_session(YES) as (s, gate, _inbox):
        try:
            d = await s.send(target, f"hello {target} from the session API", want="reply", timeout=60)
            assert d.outcome == "delivered", d.summary()
            assert any(p.target.startswith(target) and f"host key {lab2.host_key_sha256}" in p.render()
                       for p in gate.shown), [p.render() for p in gate.shown]
            msg = await d.wait_reply(90)
            assert msg is not None, d.summary()
            assert msg.verdict is not None and msg.verdict.verdict == "verified"
            assert "host h2 says: verified by pid" in msg.verdict.detail and msg.verdict.said_by == "host h2"
            assert d.reply == msg and d.state.value == "replied"
            assert d.relay_id in msg.line or msg.answers == d.relay_id
            # a halt from this session reaches the host it used, then both are cleared for the next test
            s.halt("session halt reaches h2")
            host = Ledger(Path(lab2.home) / "ledger.sqlite")
            try:
                assert host.active_halt() is not None and host.active_halt().reason == "session halt reaches h2"
                host.clear_halts(by="test")
            finally:
                host.close()
            s.unhalt()
        finally:
            await s.sender.remote.aclose()


async def test_five_rounds_between_a_local_and_a_remote_agent(lab2):  # noqa: F811
    async with live_session(YES) as (s, gate, _inbox):
        try:
            run = await s.run("five-rounds", a="claude:alpha", b="h2/codex:beta")
            assert run.state == "done" and run.round == 5, run
            remote = [st for st in run.steps if st.target == "h2/codex:beta"]
            assert len(remote) == 5 and all(st.answer is not None and st.answer.verdict == "verified"
                                            for st in remote), run
            assert max(st.hop for st in run.steps) <= 4
        finally:
            await s.sender.remote.aclose()
