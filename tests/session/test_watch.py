"""What `relay watch` shows, built from real ledger rows (a fake five-round run and a killed
send) without a terminal: each delivery's state, stage and evidence, the answers linked to it,
the empty held-requests hook, and peer text neutralised."""

from __future__ import annotations

import pytest

from relay_repl.core.controls import visible
from relay_repl.session.core.watch import REQUESTS_NOTE, WatchModel
from relay_repl.session.core.watch_view import initial
from relay_repl.store.ledger import Ledger
from tests.session.test_runner import TWO, mk, write

pytestmark = pytest.mark.anyio


async def test_a_run_replayed_event_by_event_moves_each_delivery_through_its_states(tmp_path):
    s, rep, gate, led, lines = mk(tmp_path, [True] * 4,
                                  answer=lambda env, t: f"{t.name} says \u202e hi")
    run = await s.run(write(tmp_path, TWO.format(rounds=2)))
    assert run.state == "done"
    model = WatchModel()
    seen: dict[str, list[str]] = {}
    inbox = led.inbox()
    for e in led.events():  # one event at a time, as a follower would hand them over
        model.apply([e], [m for m in inbox if m.at <= e.at and m.seq not in {x.seq for x in model.inbox}])
        for r in model.rows.values():
            states = seen.setdefault(r.ref, [])
            if not states or states[-1] != r.state:
                states.append(r.state)
    model.apply([], [m for m in inbox if m.seq not in {x.seq for x in model.inbox}])
    ids = [st.relay_id for st in run.steps]
    assert sorted(seen) == sorted(ids)
    for rid in ids:
        # the fake receivers answer during the write, so the answer is seen before the confirm stage
        assert seen[rid] == ["planned", "approved", "queued", "replied"], seen[rid]
        row = model.rows[rid]
        assert row.finished and row.state == "replied" and row.answer and "(verified" in row.answer
        assert row.target in ("fake:a", "fake:b") and row.transport == "memory" and row.stage == "confirm"
    led.event("stage:confirm", delivery="k9", relay_id="x-9", data={"state": "unknown", "detail": "screen: \x1b[31m"})
    model.apply(led.events(since=model.last_event))
    assert model.rows["x-9"].state == "unknown" and not model.rows["x-9"].finished
    text = "\n".join(model.delivery_lines() + model.inbox_lines(10) + list(model.events))
    assert "\u202e" not in text and "\x1b" not in text and "⟨U+202E⟩" in text and "\\x1b[31m" in text
    assert any(f"#{e.seq} " in line for line in model.events for e in led.events(kind="outcome"))
    assert model.held_requests() == [] and "relay_send" in REQUESTS_NOTE


async def test_the_view_opens_with_sends_still_open_however_old(tmp_path, relay_home):
    from tests.session.test_interrupted import start_and_kill

    rid = start_and_kill(tmp_path, "an old one")
    led = Ledger(relay_home / "ledger.sqlite")
    for i in range(400):  # the open send is far older than the tail the view reads
        led.event("noise", data={"i": i})
    follower, events, inbox = initial(relay_home / "ledger.sqlite")
    model = WatchModel()
    model.apply(events, inbox)
    (row,) = [r for r in model.deliveries() if not r.finished]
    assert row.relay_id == rid and row.state == "queued" and row.stage == "write"
    assert follower.since_event == led.last_event_seq()  # what comes next is new


def test_an_open_sends_event_written_as_the_view_opens_is_shown_once(tmp_path, monkeypatch):
    """The view's first rows add every event of each send still open, read after the tail: one written
    in between is also the follower's first new row, and was shown (and applied) twice."""
    import relay_repl.session.core.watch_view as watch_view
    from relay_repl.session.core.follow import LedgerFollower

    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    led.event("delivery", delivery="k1", data={"relay_id": "op-1", "spec": "fake:a", "transport": "memory"})
    led.event("stage:typed", delivery="k1", relay_id="op-1", data={"state": "typed"})
    real = LedgerFollower.from_tail

    def from_tail(p, events=0):
        got = real(p, events)
        led.event("stage:submitted", delivery="k1", relay_id="op-1", data={"state": "submitted"})
        return got

    monkeypatch.setattr(watch_view.LedgerFollower, "from_tail", staticmethod(from_tail))
    follower, events, inbox = initial(path)
    later = follower.read_new().events
    kinds = [e.kind for e in events + later]
    assert kinds == ["delivery", "stage:typed", "stage:submitted"], kinds


def test_targets_show_state_pane_and_host():
    from relay_repl.core.target import Target

    model = WatchModel()
    model.set_targets([Target(kind="codex", name="beta", address="t1", pid=7, live=True, state="busy", pane="%3",
                              host="h2", identified_by="x"),
                       Target(kind="claude", name="al\u202epha", address="a", pid=8, live=True, state="idle", pane="%1",
                              identified_by="x")])
    lines = model.target_lines()
    assert lines[0].split() == ["TARGET", "STATE", "PANE", "HOST", "PID"]
    assert any("h2/codex:beta" in x and "busy" in x and "%3" in x and "h2" in x for x in lines)
    assert any(visible("claude:al\u202epha") in x and "local" in x for x in lines)


async def test_the_view_lists_each_hosts_targets_beside_the_local_ones(tmp_path):
    """`relay hosts`: each host's relay lists its own targets (here a stand-in for `Hosts`); a host
    that fails is one line in the TARGETS heading, the rest stand."""
    import anyio

    from relay_repl.core.target import Target
    from relay_repl.session.app import make_session
    from relay_repl.session.core.watch_view import WatchView
    from relay_repl.system.polling import poll_until

    class TwoHosts:
        def __bool__(self):
            return True

        async def all_targets(self):
            far = Target(kind="codex", name="beta", address="t", pid=3, live=True, state="idle", host="h2",
                         identified_by="h2's relay")
            return [far], ["host h3: ssh: connect to host h3 port 22: No route to host"]

    s = make_session(fake=True, discover=False, echo=None, ledger=Ledger(tmp_path / "l.sqlite"))
    s.sender.remote.hosts = TwoHosts()
    view = WatchView(s, tmp_path / "l.sqlite")
    view._refresh_wanted.set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(view._targets)
        async def listed():
            return view.model.targets_at

        assert await poll_until(listed, timeout=10, interval=0.01)
        tg.cancel_scope.cancel()
    lines = view.model.target_lines()
    assert any("h2/codex:beta" in x and " h2 " in x for x in lines) and any("fake:inbox" in x for x in lines)
    assert "h3" in (view.model.targets_problem or "")
    text = "".join(t for _, t in view.fragments())
    assert "TARGETS  (host h3: ssh" in text and "h2/codex:beta" in text


def test_held_agent_requests_come_and_go_with_their_ledger_events(tmp_path):
    """Issue 31 fills the view's request section: held on arrival, gone once decided, past its expiry,
    or when the view opens after it was decided; one neutralised line each."""
    from relay_repl.core.request import Request
    from relay_repl.store.requests import RequestStore

    led = Ledger(tmp_path / "ledger.sqlite")
    store = RequestStore(led)
    a = Request.held(id="beta-1", asker="codex:beta", verdict="verified", evidence="", asker_pid=1, to="claude:alpha",
                     body="push --force \u202e now", want="reply", hop=1, line="l")
    b = Request.held(id="beta-2", asker="codex:beta", verdict="verified", evidence="", asker_pid=1, to="claude:alpha",
                     body="second", want="none", hop=1, line="l")
    store.add(a)
    store.add(b)
    model = WatchModel()
    model.apply(led.events())
    assert [r["id"] for r in model.held_requests()] == ["beta-1", "beta-2"]
    (first, _) = model.request_lines()
    assert first.startswith("beta-1 ") and "from codex:beta [verified] to claude:alpha want=reply hop 1 FLAG: push, force" in first
    assert "\u202e" not in first and "⟨U+202E⟩" in first
    store.save(a.moved("denied", "no"), expect="held")
    model.apply(led.events(since=model.last_event))
    assert [r["id"] for r in model.held_requests()] == ["beta-2"]
    (decided,) = model.decided_lines()  # issue 34: decided from the view, the request shows its new state
    assert decided.startswith("·beta-1 ") and " denied (no): from codex:beta to claude:alpha: push" in decided
    assert "\u202e" not in decided
    c = Request.held(id="beta-3", asker="codex:beta", verdict="verified", evidence="", asker_pid=1, to="claude:alpha",
                     body="third", want="none", hop=1, line="l")
    store.add(c)
    store.save(c.moved("approved", delivery_id="op-7"), expect="held")
    store.save(store.get("beta-3").moved("delivered", delivery_state="in_turn"))
    model.apply(led.events(since=model.last_event))
    assert [r["id"] for r in model.held_requests()] == ["beta-2"] and len(model.decided_lines()) == 2
    assert model.decided_lines()[-1].startswith("·beta-3 ")
    assert " delivered; sent as op-7 (in_turn): from codex:beta to claude:alpha: third" in model.decided_lines()[-1]
    led.close()
    follower, events, inbox = initial(tmp_path / "ledger.sqlite")
    fresh = WatchModel()
    fresh.apply(events, inbox)
    assert [r["id"] for r in fresh.held_requests()] == ["beta-2"]


async def test_a_hosts_toml_relay_cannot_read_is_one_line_and_the_local_targets_stand(tmp_path, relay_home):
    """Issue 32: the watch read hosts.toml through `Hosts()` outside its guard, so a malformed file
    (here `hosts` a string) ended the view with its error instead of one TARGETS line."""
    import anyio

    from relay_repl.session.app import make_session
    from relay_repl.session.core.watch_view import WatchView
    from relay_repl.system.polling import poll_until

    relay_home.mkdir(parents=True, exist_ok=True)
    (relay_home / "hosts.toml").write_text('hosts = "x"\n')
    s = make_session(fake=True, discover=False, echo=None, ledger=Ledger(tmp_path / "l.sqlite"))
    view = WatchView(s, tmp_path / "l.sqlite")
    view._refresh_wanted.set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(view._targets)

        async def listed():
            return view.model.targets_at

        assert await poll_until(listed, timeout=10, interval=0.01)
        tg.cancel_scope.cancel()
    assert any("fake:inbox" in x for x in view.model.target_lines())
    assert (view.model.targets_problem or "").startswith(f"{relay_home / 'hosts.toml'}: `hosts` must be a table")


async def test_the_request_keys_act_on_the_one_marked_chosen_by_its_id(tmp_path):
    """Issue 34: `a` / `x` act on the request the screen marks `>`, kept by id: one leaving above it
    does not move the choice onto another; one leaving while chosen is not decided by a stale key."""
    from relay_repl.core.request import Request
    from relay_repl.session.core.watch_view import WatchView
    from relay_repl.store.requests import RequestStore

    led = Ledger(tmp_path / "ledger.sqlite")
    store = RequestStore(led)
    reqs = [Request.held(id=f"beta-{n}", asker="codex:beta", verdict="verified", evidence="", asker_pid=1,
                         to="claude:alpha", body=f"ask {n}", want="none", hop=1, line="l") for n in (1, 2, 3)]
    for r in reqs:
        store.add(r)
    view = WatchView(None, tmp_path / "ledger.sqlite")
    view.model.apply(led.events())

    def drawn() -> str:
        return "".join(t for _, t in view.fragments())

    assert "> beta-1 " in drawn() and "a: approve the chosen (>) request" in drawn()
    view._choose(view._req_index(+1))
    assert "> beta-2 " in drawn() and view.chosen_request() == "beta-2"
    store.save(reqs[0].moved("denied", "no"), expect="held")  # the one above leaves: the choice stays on beta-2
    view.model.apply(led.events(since=view.model.last_event))
    assert view.chosen_request() == "beta-2" and "> beta-2 " in drawn()
    store.save(reqs[1].moved("expired", "past"), expect="held")  # the chosen one leaves before a redraw
    view.model.apply(led.events(since=view.model.last_event))
    assert view.chosen_request() is None, "a key pressed now decides nothing"
    await view.decide_request(True)
    assert "beta-2 is no longer held" in view.status
    assert "> beta-3 " in drawn() and view.chosen_request() == "beta-3"
    await view.decide_request(True)  # a view without a way to decide says where to
    assert "`relay approve beta-3` in a terminal" in view.status
    assert store.get("beta-3").state == "held"
    led.close()
