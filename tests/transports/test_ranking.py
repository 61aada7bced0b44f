from __future__ import annotations

import pytest

from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import PolicyRefusal
from relay_repl.core.target import Target
from relay_repl.transports.base import Capabilities, StageLog, Transport
from relay_repl.transports.ranking import Requirements, choose


def make(name: str, **caps) -> Transport:
    class T(Transport):
        capabilities = Capabilities(**caps)

        def delivered_when(self, target, envelope):
            return "x"

        async def send(self, d: Delivery, target, payload, log: StageLog):
            raise AssertionError("ranking must never send")

        async def confirm(self, d, target, payload, log, timeout):
            raise AssertionError("ranking must never confirm")

    T.name = name
    return T()


QUEUE = make("queue", durable=True)
MSG = make("msg", native_reply=True, receipts=True, live_only=True, same_uid_only=True)
SOCK = make("sock", receipts=True, live_only=True, same_uid_only=True)
TMUX = make("tmux", live_only=True, needs_pane=True)
ALL = [TMUX, SOCK, MSG, QUEUE]


def tgt(*names, pane="%1", state="idle", live=True):
    return Target(kind="codex", name="x", address="t", live=live, state=state, pane=pane, transports=names,
                  identified_by="test")


def test_strongest_capability_wins_regardless_of_list_order():
    assert choose(tgt("tmux", "sock", "msg", "queue"), ALL).transport is QUEUE
    c = choose(tgt("tmux", "sock", "msg"), ALL)
    assert c.transport is MSG
    assert choose(tgt("tmux", "sock"), ALL).transport is SOCK
    assert choose(tgt("tmux"), ALL).transport is TMUX


def test_a_new_stronger_transport_wins_the_same_ranking():
    new = make("brand-new", durable=True, native_reply=True, receipts=True)
    assert choose(tgt("queue", "brand-new"), [QUEUE, new]).transport is new


def test_tmux_needs_a_rostered_pane():
    with pytest.raises(PolicyRefusal, match="no rostered tmux pane"):
        choose(tgt("tmux", pane=None), ALL)
    assert choose(tgt("tmux", "sock", pane=None), ALL).transport is SOCK


def test_durable_requested_is_never_downgraded():
    with pytest.raises(PolicyRefusal, match="no durable transport.*live-only msg, sock.*not downgrading") as e:
        choose(tgt("tmux", "sock", "msg"), ALL, Requirements(durable=True))
    assert "\n" not in str(e.value)
    assert choose(tgt("sock", "queue"), ALL, Requirements(durable=True)).transport is QUEUE


def test_native_reply_required():
    assert choose(tgt("sock", "msg", "queue"), ALL, Requirements(native_reply=True)).transport is MSG
    with pytest.raises(PolicyRefusal, match="unassisted native reply"):
        choose(tgt("sock", "queue"), ALL, Requirements(native_reply=True))


def test_never_idle_target_gets_durable_or_a_refusal():
    c = choose(tgt("tmux", "queue", state="never-idle"), ALL)
    assert c.transport is QUEUE and "never goes idle" in c.notes[0]
    with pytest.raises(PolicyRefusal, match="no durable transport"):
        choose(tgt("tmux", "sock", state="never-idle"), ALL)


def test_explicit_request_is_honoured_or_refused_never_swapped():
    c = choose(tgt("tmux", "queue"), ALL, requested="tmux")
    assert c.transport is TMUX and "queue would also work" in c.fallback
    with pytest.raises(PolicyRefusal, match="cannot reach"):
        choose(tgt("tmux"), ALL, requested="queue")
    with pytest.raises(PolicyRefusal, match="refused.*no rostered"):
        choose(tgt("tmux", "queue", pane=None), ALL, requested="tmux")
    with pytest.raises(PolicyRefusal, match="cannot give a durable path"):
        choose(tgt("tmux", "queue"), ALL, Requirements(durable=True), requested="tmux")


def test_dead_target_live_only_refused():
    with pytest.raises(PolicyRefusal, match="not live"):
        choose(tgt("sock", live=False), ALL)


def test_the_plan_names_no_fallback_a_plain_send_would_not_take():
    """Issue 16 case 9: a plain send runs only the chosen transport, so the plan's fallback
    says none, names the runner-up and the chain that would try it (before: 'sock')."""
    c = choose(tgt("tmux", "sock", "msg"), ALL)
    assert c.fallback.startswith("none (")
    assert "sock would also work" in c.fallback
    assert "transport=session.transports.msg | session.transports.sock" in c.fallback
    assert choose(tgt("tmux"), ALL).fallback == "none"
