"""Approval as a capability (issue 16, case 6), fast: every side-effecting primitive refuses
without an approval, with a forged one (built by hand or copied from a real one), with a
live approval for ANOTHER plan, and with a spent one; and works with the gate's own.

The primitives run unchanged against what they write to: the replayed `codex queue` and
queue file, a replayed Claude session socket, a real private tmux server, a temporary
Claude registry, real files to unlink. Each refusal is checked on the receiver (no row, no
frame, pane unchanged, no file), not only on the exception.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from relay_repl.agents.claude_code import transcript_path
from relay_repl.core.approval import Approval, Scope, check, minter, spend
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.errors import NoApproval
from relay_repl.core.target import Target
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.store.ledger import Ledger
from relay_repl.system.polling import poll_until
from relay_repl.system.proc import proc_start
from relay_repl.testing import replay
from relay_repl.transports.base import StageLog
from relay_repl.transports.socket_message import SocketTransport
from relay_repl.transports.durable_queue import DurableQueueTransport
from relay_repl.transports.fake import InMemoryTransport, fake_target
from relay_repl.transports.tmux import PaneIO, PaneRef, TmuxProgress, TmuxTransport
from tests.support.approvals import approval_for, file_approval

pytestmark = pytest.mark.anyio
FIX = Path(__file__).parent.parent / "agents" / "fixtures"
THREAD = "01a22ecc-17f7-7ab1-b82a-e849cb4be152"
PAYLOAD = "[relay/1 from=op to=beta id=op-1 hop=0 want=none] approved bytes"
OTHER = "[relay/1 from=op to=beta id=op-2 hop=0 want=none] other bytes"
BAD = ["none", "built-by-hand", "copied", "another-plan", "spent"]


async def bad_approval(kind: str, transport: str, target: Target, payload: str) -> Any:
    """An approval that must not work for (transport, target, payload)."""
    if kind == "none":
        return None
    real = await approval_for(transport, target, payload)
    if kind == "built-by-hand":  # the right fields, digest and nonce: still not the mint's object
        return Approval(scope=real.scope, digest=real.digest, nonce=real.nonce)
    if kind == "copied":
        return real.model_copy()
    if kind == "spent":
        spend(real)
        return real
    return await approval_for(transport, target, OTHER, relay_id="op-2")  # live, from the gate, for another plan


async def until(pred: Callable[[], Any], timeout: float = 5.0) -> bool:
    """Wait (bounded) until `pred()` is truthy."""
    async def check() -> bool | None:
        return True if pred() else None

    return bool(await poll_until(check, timeout=timeout, interval=0.02))


def log_for(tmp_path: Path, target: Target, transport: str) -> tuple[Delivery, StageLog]:
    d = Delivery(target=target.spec, transport=transport)
    return d, StageLog(d, Ledger(tmp_path / "ledger.sqlite"))


def test_only_the_gate_mints():
    with pytest.raises(NoApproval, match="only the gate mints approvals"):
        minter()


async def test_an_approval_is_bound_to_its_scope():
    t = fake_target()
    a = await approval_for("memory", t, PAYLOAD)
    assert check(a, what="x", transport="memory", payload=PAYLOAD, target=t.spec).payload == PAYLOAD
    for wrong in ({"transport": "tmux"}, {"payload": PAYLOAD + " "}, {"target": "fake:other"}, {"pane": "%9"}):
        with pytest.raises(NoApproval, match=r"approval is for another plan .*no approval for this plan"):
            check(a, what="x", **wrong)
    forged = Approval(scope=Scope(**{**a.scope.model_dump(), "payload": OTHER}), digest=a.digest, nonce=a.nonce)
    with pytest.raises(NoApproval, match="^x refused: no approval for this plan: side effects go through session.send"):
        check(forged, what="x", payload=OTHER)
    spend(a)
    with pytest.raises(NoApproval):
        check(a, what="x")


# -- the primitives ------------------------------------------------------------------------------

@pytest.fixture
def codex(tmp_path: Path) -> tuple[DurableQueueTransport, Target, Path]:
    home = replay.codex_home_from(FIX / "codex-0.169.0-queue_1.sqlite", tmp_path / "codex")
    cli = replay.codex_cli(tmp_path / "bin")
    target = Target(kind="codex", prefix="codex", name="beta", address=THREAD, pid=None, live=True, state="idle",
                    transports=("codex-queue",), identified_by="replay", detail={"codex_home": str(home)})
    return DurableQueueTransport("codex-queue", binary=str(cli)), target, home


@pytest.mark.parametrize("kind", BAD)
async def test_codex_queue_insert_needs_the_gates_approval(tmp_path, codex, kind):
    t, target, home = codex
    d, log = log_for(tmp_path, target, t.name)
    with pytest.raises(NoApproval, match="codex queue insert for codex:beta refused"):
        await t.send(d, target, PAYLOAD, log, approval=await bad_approval(kind, t.name, target, PAYLOAD))
    assert replay.queue_rows(home) == [] and d.evidence == []
    await t.send(d, target, PAYLOAD, log, approval=await approval_for(t.name, target, PAYLOAD))
    assert d.state is DeliveryState.QUEUED and len(replay.queue_rows(home)) == 1


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[tuple[Target, replay.ClaudeSessionReplay]]:
    short = Path(tempfile.mkdtemp(prefix="rr-", dir="/tmp"))
    sock = short / f"{os.getpid()}.sock"
    tp = transcript_path(tmp_path / "claude", "/lab/w", str(uuid.uuid4()))
    tp.parent.mkdir(parents=True)
    tp.write_text("")
    target = Target(kind="claude-code", prefix="claude", name="alpha", address=str(sock), pid=os.getpid(), live=True,
                    state="idle", transports=("claude-code-socket",), identified_by="replay",
                    socket=str(sock))
    session = replay.ClaudeSessionReplay(sock, tp, FIX / "claude-2.1.328-transcript.jsonl")
    yield target, session
    session.close()
    shutil.rmtree(short, ignore_errors=True)


@pytest.mark.parametrize("kind", BAD)
async def test_claude_socket_write_needs_the_gates_approval(tmp_path, claude, kind):
    target, session = claude
    t = SocketTransport("claude-code-socket")
    d, log = log_for(tmp_path, target, t.name)
    with pytest.raises(NoApproval, match="claude-code-socket write to claude:alpha refused"):
        await t.send(d, target, PAYLOAD, log, approval=await bad_approval(kind, t.name, target, PAYLOAD))
    assert session.frames == [] and d.evidence == []
    await t.send(d, target, PAYLOAD, log, approval=await approval_for(t.name, target, PAYLOAD))
    assert await until(lambda: session.frames)
    assert session.frames[-1]["message"]["content"] == PAYLOAD


@pytest.mark.parametrize("kind", BAD)
async def test_in_memory_write_needs_the_gates_approval(tmp_path, kind):
    t, target = InMemoryTransport(), fake_target()
    d, log = log_for(tmp_path, target, t.name)
    with pytest.raises(NoApproval, match="in-memory write"):
        await t.send(d, target, PAYLOAD, log, approval=await bad_approval(kind, t.name, target, PAYLOAD))
    assert t.received == []
    await t.send(d, target, PAYLOAD, log, approval=await approval_for(t.name, target, PAYLOAD))
    assert t.received == [PAYLOAD]


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[tuple[PaneRef, Target, Callable[[], str]]]:
    """A real private tmux server whose one pane runs `cat` (what is typed shows)."""
    sock = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp")) / "s"
    tmux = ["tmux", "-S", str(sock), "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "10", "cat"], check=True)
    pane_id = subprocess.run([*tmux, "display-message", "-p", "#{pane_id}"], capture_output=True, text=True,
                             check=True).stdout.strip()
    pid = int(subprocess.run([*tmux, "display-message", "-p", "#{pane_pid}"], capture_output=True, text=True,
                             check=True).stdout.strip())
    target = Target(kind="claude-code", prefix="claude", name="alpha", address="x", pid=pid, live=True, state="idle",
                    pane=pane_id, transports=("tmux",), identified_by="test pane", tmux_socket=str(sock))

    def capture() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", pane_id], capture_output=True, text=True).stdout

    yield PaneRef(socket_path=str(sock), pane_id=pane_id), target, capture
    subprocess.run([*tmux, "kill-server"], check=False)
    shutil.rmtree(sock.parent, ignore_errors=True)


@pytest.mark.parametrize("kind", BAD)
async def test_pane_literal_and_keys_need_the_gates_approval(pane, kind):
    ref, target, capture = pane
    io = PaneIO()
    before = capture()
    bad = await bad_approval(kind, "tmux", target, PAYLOAD)
    with pytest.raises(NoApproval, match=f"typing into pane {ref.pane_id} refused"):
        io.send_literal(ref, PAYLOAD, bad)
    if kind != "another-plan":  # another tmux plan to this very pane covers its keys (its Enter, its Tab)
        for key in ("Enter", "Tab"):
            with pytest.raises(NoApproval, match=f"{key} into pane {ref.pane_id} refused"):
                io.send_key(ref, key, bad)
    codex_plan = await approval_for("codex-queue", target, PAYLOAD)  # a live approval for another transport
    with pytest.raises(NoApproval, match="transport differ"):
        io.send_key(ref, "Enter", codex_plan)
    assert capture() == before
    good = await approval_for("tmux", target, PAYLOAD)
    io.send_literal(ref, PAYLOAD, good)
    io.send_key(ref, "Enter", good)
    assert await until(lambda: capture().count(PAYLOAD) == 2)  # typed, and cat echoed it


async def test_submit_staged_needs_the_gates_approval(tmp_path):
    from relay_repl.testing import ReplayIO
    from tests.transports.test_tmux_live import golden, replay_target

    staged = golden("claude-code", "busy_staged")
    io = ReplayIO(staged)
    target = replay_target("claude-code", staged, tmp_path)
    d, log = log_for(tmp_path, target, "tmux")
    TmuxProgress(pane_ref=PaneRef(socket_path="/nonexistent/replay", pane_id="%0")).save(d)
    t = TmuxTransport(io, poll=0.02, settle=0.2)
    d.relay_id = "op-1"
    for kind in BAD:
        with pytest.raises(NoApproval, match="submitting into claude-code:alpha's pane refused"):
            await t.submit_staged(d, target, PAYLOAD, log,
                                  approval=await bad_approval(kind, "tmux", target, "<Enter>"))
    assert io.keys == []
    staged_payload = "[relay/1 test] typed while busy"  # what the recorded composer holds
    await t.submit_staged(d, target, staged_payload, log,
                          approval=await approval_for("tmux", target, "<Enter>", relay_id="op-1"))
    assert io.keys == [("key", "Enter")]


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Any]:
    from relay_repl.agents.claude_code.peer import ClaudePeerRegistration

    cfg, socks = tmp_path / "claude", tmp_path / "socks"
    (cfg / "sessions").mkdir(parents=True)
    socks.mkdir()
    peer = subprocess.Popen(["sleep", "60"])
    (cfg / "sessions" / f"{peer.pid}.json").write_text(json.dumps({
        "pid": peer.pid, "procStart": proc_start(peer.pid), "name": "alpha",
        "messagingSocketPath": str(socks / f"{peer.pid}.sock"), "startedAt": 1}))
    yield ClaudePeerRegistration(name="relay-operator", claude_version="2.1.328", cfg=cfg)
    peer.kill()
    peer.wait()


async def _plan_approval(plan: Any) -> Approval:
    from relay_repl.session.core.gate import ask
    from relay_repl.session.core.gating import Gatekeeper

    a = await ask(ScriptedGate([True]), plan, Gatekeeper.scope(plan, None))
    assert a is not None
    return a


@pytest.mark.parametrize("kind", ["none", "copied", "another-plan", "spent"])
async def test_registry_record_write_needs_the_approval_of_its_plan(registry, kind):
    reg = registry
    real = await _plan_approval(reg.plan())
    bad = {"none": None, "copied": real.model_copy(), "another-plan": await file_approval(reg.record_path)}.get(kind)
    if kind == "spent":
        spend(real)
        bad = real
    with pytest.raises(NoApproval, match="into Claude's registry refused"):
        reg.write(bad)
    assert not reg.record_path.exists() and not reg.key_path.exists()
    reg.write(await _plan_approval(reg.plan()))
    assert json.loads(reg.record_path.read_text())["pid"] == os.getpid() and reg.key_path.exists()


async def test_a_socket_in_another_programs_directory_needs_an_approval_naming_it(relay_home):
    from tests.session.test_inbox import run_inbox

    where = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))
    path = where / "x.sock"

    async def body(inbox, led, seen):
        for bad in (None, await file_approval(where / "y.sock")):
            with pytest.raises(NoApproval, match=f"creating the socket {path} refused"):
                await inbox.listen(path=path, approval=bad)
            assert not path.exists()
        await inbox.listen(path=path, approval=await file_approval(path))
        assert path.is_socket()
        assert await until(lambda: len(inbox._scopes) == 2)  # served (closing before that races the listener)

    try:
        await run_inbox(relay_home, body)
    finally:
        shutil.rmtree(where, ignore_errors=True)


async def test_the_debuggers_armed_step_needs_an_approval(tmp_path):
    from relay_repl.session.session import Session

    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=ScriptedGate([]))
    d, log = log_for(tmp_path, fake_target(), "memory")
    d.relay_id = "op-1"
    ran: list[Any] = []

    async def step(a: Approval) -> None:
        ran.append(a)

    for kind in BAD:
        with pytest.raises(NoApproval, match="the debugger's step refused"):
            await s._run_armed(d, log, await bad_approval(kind, "memory", fake_target(), PAYLOAD), step)
    assert ran == [] and not hasattr(s, "run_armed")
    good = await approval_for("memory", fake_target(), PAYLOAD, relay_id="op-1")
    await s._run_armed(d, log, good, step)
    assert ran == [good]


async def test_a_send_spends_its_approval_when_the_delivery_ends(tmp_path):
    """Single use: the approval a delivery ran under cannot act again once it is over."""
    from relay_repl.agents.discovery import StaticProvider
    from relay_repl.session.session import Session

    class Keeps(InMemoryTransport):
        def __init__(self) -> None:
            super().__init__()
            self.given: list[Any] = []

        async def send(self, delivery, target, payload, log, *, approval=None):  # type: ignore[no-untyped-def]
            self.given.append(approval)
            await super().send(delivery, target, payload, log, approval=approval)

    mem = Keeps()
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=ScriptedGate([True]), transports=[mem],
                providers=[StaticProvider("fake", [fake_target()])])
    d = await s.send("fake:inbox", "once")
    assert d.outcome == "delivered" and len(mem.received) == 1
    (used,) = mem.given
    dd, log = log_for(tmp_path, fake_target(), "memory")
    with pytest.raises(NoApproval):
        await InMemoryTransport.send(mem, dd, fake_target(), d.plan.payload, log, approval=used)
    assert len(mem.received) == 1
    answer = s.ledger.events(kind="answer")[-1].data
    assert answer["approved"] is True and answer["approval"] == used.digest


async def test_an_approval_covers_the_files_its_plan_names_exactly():
    """check(file=...) matched a substring of the plan's entries: an approval whose plan said
    `creates /x/sock.bak` covered creating /x/sock, and `removes /x/inbox-12.sock (...)` covered
    removing /x/inbox-1 (old code fails the refusals)."""
    from relay_repl.core.approval import check
    from relay_repl.core.errors import NoApproval

    a = await file_approval("/x/sock.bak", "/x/inbox-12.sock")
    for named in ("/x/sock.bak", "/x/inbox-12.sock"):
        check(a, what="test", file=named)
    for other in ("/x/sock", "/x/inbox-1", "/x/", "sock.bak", "creates"):
        with pytest.raises(NoApproval):
            check(a, what="test", file=other)
