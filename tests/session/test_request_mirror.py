"""A host's request has each state change told to the host (session/remote/request_mirror.py): one ssh call
of up to 15 s each, which ran on the event loop and froze the REPL (prompt, inbox) while it waited.

The ssh call is replaced by a double that blocks until the event loop itself releases it: a tell made
on the loop never sees the release (it times out and says so), one made on a worker thread does."""

from __future__ import annotations

import threading

import anyio
import pytest

from relay_repl.core.errors import HostError
from relay_repl.core.request import Request

pytestmark = pytest.mark.timeout(120)


def held(rid: str = "standin/beta-1") -> Request:
    return Request.held(id=rid, asker="standin/codex:beta", verdict="host standin says: verified", evidence="",
                        asker_pid=None, to="standin/claude:alpha", body="hello", want="reply", hop=1, line="{}")


def blocking_host(monkeypatch, fail: bool = False):
    """call_once double: waits for `release` (set by a task on the event loop); records each call."""
    import relay_repl.session.remote.remote_send as remote_send

    release = threading.Event()
    calls: list[dict] = []

    def call_once(ch, op, args, *, what, timeout=15.0):
        released = release.wait(10.0)  # never set while the loop is blocked in this very call
        calls.append({"op": op, "state": args["update"]["state"], "released": released,
                      "thread": threading.current_thread() is threading.main_thread()})
        if fail:
            raise HostError("host standin did not answer")
        return {"id": args["id"], "state": args["update"]["state"]}

    monkeypatch.setattr(remote_send, "call_once", call_once)
    return release, calls


def test_state_changes_are_told_off_the_event_loop_one_at_a_time_in_order(monkeypatch, hostile):  # noqa: F811
    """Old code fails it: the tell ran on the loop, so the loop never released it (released False)."""
    from relay_repl.session.app import make_session

    release, calls = blocking_host(monkeypatch)
    said: list[str] = []

    async def main() -> None:
        s = make_session(echo=said.append, discover=False)
        store = s.asks.store
        req = held()
        assert store.add(req)
        async with anyio.create_task_group() as tg:
            s.asks.store.tell_from(tg)
            approved = req.moved("approved")
            assert store.save(approved, expect="held")  # returns at once: the host is told from a thread
            assert store.save(approved.moved("delivered"))
            release.set()  # this loop runs on while the host is told
        s.ledger.close()

    anyio.run(main)
    assert [(c["state"], c["released"], c["thread"]) for c in calls] == [("approved", True, False),
                                                                         ("delivered", True, False)], calls
    assert not said


def test_a_host_not_told_is_one_line_and_an_event_from_the_loop(monkeypatch, hostile):  # noqa: F811
    from relay_repl.session.app import make_session
    from relay_repl.store.ledger import Ledger

    release, calls = blocking_host(monkeypatch, fail=True)
    release.set()
    said: list[str] = []

    async def main() -> None:
        s = make_session(echo=said.append, discover=False)
        req = held()
        s.asks.store.add(req)
        async with anyio.create_task_group() as tg:
            s.asks.store.tell_from(tg)
            s.asks.store.save(req.moved("denied", "no"), expect="held")
        s.ledger.close()

    anyio.run(main)
    assert [c["state"] for c in calls] == ["denied"]
    assert said == ["relay: host standin: request beta-1 is denied here, but its asker there was not told "
                    "(host standin did not answer); it reads the old state until the next change"]
    led = Ledger.default()
    assert [e.data["state"] for e in led.events() if e.kind == "host-request-unsaid"] == ["denied"]
    led.close()


def test_without_a_task_group_the_host_is_told_at_once(monkeypatch, hostile):  # noqa: F811
    """A one-shot command (no loop serving requests): the call is made in `save`, as before."""
    from relay_repl.session.app import make_session

    release, calls = blocking_host(monkeypatch)
    release.set()
    s = make_session(echo=lambda line: None, discover=False)
    req = held()
    s.asks.store.add(req)
    s.asks.store.save(req.moved("approved"), expect="held")
    assert [c["state"] for c in calls] == ["approved"]  # told before save returned
    s.ledger.close()
