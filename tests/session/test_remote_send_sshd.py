"""The Session API with HOST/ specs, over a real OpenSSH channel to a real sshd (root only).

`await session.send("h2/fake:inbox", ...)` is planned by the host's relay, gated by THIS
session's approver (the plan shows its route and the host key), carried out there, and
kept here as a Delivery (in this session and this ledger); `session.target` resolves the
spec through the host; `session.halt()` reaches the host. The live test with real agents
and their replies is tests/lab/test_hosts_session_live.py."""

from __future__ import annotations

import subprocess

import anyio
import pytest

from relay_repl.core.delivery import DeliveryState

pytestmark = pytest.mark.timeout(120)


def fingerprint(root) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(root / "ssh" / "host_ed25519.pub")],
                         capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def test_session_send_to_a_host_spec_is_gated_here_and_recorded_here(h2, tmp_path):
    from relay_repl.session.app import make_session
    from relay_repl.session.remote.remote import Hosts
    from relay_repl.store.ledger import Ledger

    shown = []

    async def approve(plan) -> bool:
        shown.append(plan)
        return True

    async def go():
        session = make_session(approve=approve, echo=None, discover=False)
        session.sender.remote.hosts = Hosts(remote_command=("relay", "--fake", "serve", "--stdio"))
        try:
            tgt = await session.target("h2/fake:inbox")
            d = await session.send("h2/fake:inbox", "hello over ssh")
            session.halt("stop everywhere")
            return session, tgt, d
        finally:
            await session.sender.remote.aclose()

    session, tgt, d = anyio.run(go)
    assert tgt.host == "h2" and tgt.spec == "h2/fake:inbox"
    assert len(shown) == 1 and shown[0].target.startswith("h2/fake:inbox")
    assert f"route: via ssh h2 (h2), host key {fingerprint(h2)}" in shown[0].render()
    assert d.target == "h2/fake:inbox" and d.outcome == "delivered", d.summary()
    assert d in session.deliveries
    outcomes = [e for e in session.ledger.events(relay_id=d.relay_id) if e.kind == "outcome"]
    assert outcomes and outcomes[-1].data["host"] == "h2" and outcomes[-1].data["state"] == d.state.value
    host = Ledger(tmp_path / "h2home" / "ledger.sqlite")
    try:
        assert any(e.kind == "plan" for e in host.events(relay_id=d.relay_id))  # planned there
        assert host.active_halt() is not None and host.active_halt().reason == "stop everywhere"
    finally:
        host.close()
    assert session.ledger.active_halt() is not None
    assert d.state is not DeliveryState.INTERRUPTED


def test_the_host_key_is_read_once_per_master_and_again_for_a_new_one(h2, tmp_path):
    """Issue 33: a warm send's route shows the key read when its master connected (the one that
    connection was checked against) without two more ssh spawns per send; a new master reads it again.
    Old code read it (ssh -G, ssh-keygen) for every send."""
    from relay_repl.session.remote import remote

    reads: list[str] = []
    read = remote.host_key_fingerprint

    async def counted(ch):
        fp = await read(ch)
        reads.append(str(fp))
        return fp

    shown = []

    async def approve(plan) -> bool:
        shown.append(plan.render())
        return True

    async def go():
        hosts = remote.Hosts(remote_command=("relay", "--fake", "serve", "--stdio"))
        try:
            for i in range(3):
                await remote.send_remote(hosts, "h2/fake:inbox", f"warm {i}", approve=approve, echo=lambda line: None)
            await hosts.channel("h2").stop_master()  # a new master next: its key is read again
            await remote.send_remote(hosts, "h2/fake:inbox", "cold again", approve=approve, echo=lambda line: None)
        finally:
            await hosts.aclose()

    mp = pytest.MonkeyPatch()
    mp.setattr(remote, "host_key_fingerprint", counted)
    try:
        anyio.run(go)
    finally:
        mp.undo()
    assert reads == [fingerprint(h2)] * 2
    assert len(shown) == 4 and all(f"host key {fingerprint(h2)}" in r for r in shown)


def test_master_killed_mid_send_is_interrupted_here_and_resume_looks_there_and_sends_once(h2, tmp_path):
    """SIGKILL of the ssh master while the operator answers: the delivery is `interrupted`, stage
    `remote`, in THIS ledger; `session.debugger(id).resume()` first asks the host's relay for its
    evidence (never approved there, never sent), re-sends under the same id once; a second
    resume finds it went out there and sends nothing: the host's ledger counts the id sent once."""
    import os
    import signal

    from relay_repl.session.app import make_session
    from relay_repl.session.remote.remote import Hosts
    from relay_repl.store.ledger import Ledger

    shown = []
    hosts = Hosts(remote_command=("relay", "--fake", "serve", "--stdio"))

    async def approve(plan) -> bool:
        shown.append(plan)
        if len(shown) == 1:
            os.kill(hosts.channel("h2").master_pid, signal.SIGKILL)  # the channel dies as the operator says yes
        return True

    async def go():
        session = make_session(approve=approve, echo=None, discover=False)
        session.sender.remote.hosts = hosts
        try:
            d = await session.send("h2/fake:inbox", "hello once", want="none")
            first = d.model_copy()
            resumed = await session.debugger(d.relay_id).resume()
            again = await session.debugger(d.relay_id).resume()
            return session, first, resumed, again
        finally:
            await hosts.aclose()

    session, first, resumed, again = anyio.run(go)
    assert first.state is DeliveryState.INTERRUPTED and first.stage == "remote" and first.relay_id
    rid = first.relay_id
    recorded = [e.data for e in session.ledger.events(relay_id=rid) if e.kind == "outcome"]
    assert recorded[0]["state"] == "interrupted" and recorded[0]["stage"] == "remote" and recorded[0]["host"] == "h2"
    assert [e.kind for e in session.ledger.events(relay_id=rid) if e.kind == "debug-look"] == ["debug-look"] * 2
    assert resumed.relay_id == rid and resumed.outcome == "delivered", resumed.summary()
    assert again.outcome == "delivered" and "not re-sent" in (again.reason or "")
    assert len(shown) == 2  # asked for the first send and the one re-send, not for the second resume
    host = Ledger(tmp_path / "h2home" / "ledger.sqlite")
    try:
        assert host.sightings(rid, "sent") == 1  # the id went out on the host exactly once
    finally:
        host.close()


def test_changed_host_key_refuses_a_session_send_and_nothing_runs_on_the_host(h2, tmp_path):
    """A send works; the host's key then changes (the master gone, as after ControlPersist): the
    next `session.send` is refused with the next step, and the host shows nothing ran: no new
    login in sshd's log, and its relay's ledger (the marker a `relay serve` send writes) unchanged."""
    from relay_repl.core.errors import HostKeyError
    from relay_repl.session.app import make_session
    from relay_repl.session.remote.remote import Hosts
    from relay_repl.store.ledger import Ledger

    async def yes(plan) -> bool:
        return True

    def host_events() -> int:
        led = Ledger(tmp_path / "h2home" / "ledger.sqlite")
        try:
            return len(led.events())
        finally:
            led.close()

    async def send_once():
        session = make_session(approve=yes, echo=None, discover=False)
        hosts = Hosts(remote_command=("relay", "--fake", "serve", "--stdio"))
        session.sender.remote.hosts = hosts
        try:
            return await session.send("h2/fake:inbox", "before the key changed")
        finally:
            await hosts.aclose()
            await hosts.channel("h2").stop_master()

    assert anyio.run(send_once).outcome == "delivered"
    events, logins = host_events(), (h2 / "ssh" / "sshd.log").read_text().count("Accepted publickey")
    assert events > 0 and logins > 0  # the marker is written when anything runs there
    kh = h2 / "ssh" / "known_hosts"
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kh.write_text(f"{kh.read_text().split()[0]} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    with pytest.raises(HostKeyError, match="CHANGED"):
        anyio.run(send_once)
    assert host_events() == events
    assert (h2 / "ssh" / "sshd.log").read_text().count("Accepted publickey") == logins
