"""The codex-queue and Claude socket transports through their seams, fast, on recorded lab files.

The real transports run unchanged; what they talk to is replayed from the lab
(relay_repl/testing/replay.py): `codex queue` and the queue file, Codex taking the item
into its rollout, a Claude session socket appending what Claude appends to its
transcript (top-level `origin` when idle, `attachment.origin` when busy).
"""

from __future__ import annotations

import json
import os
from contextlib import asynccontextmanager
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import anyio
import pytest

from relay_repl.agents.claude_code import transcript_path
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger
from relay_repl.system.proc import proc_start
from relay_repl.testing import replay
from relay_repl.transports.base import StageLog
from relay_repl.transports.socket_message import SocketTransport
from relay_repl.transports.durable_queue import DurableQueueTransport
from tests.support.approvals import approved_send

pytestmark = pytest.mark.anyio
FIX = Path(__file__).parent.parent / "agents" / "fixtures"
QUEUE = FIX / "codex-0.169.0-queue_1.sqlite"
ROLLOUT = FIX / "codex-0.169.0-rollout-typed.jsonl"
TRANSCRIPT = FIX / "claude-2.1.328-transcript.jsonl"  # holds both the top-level and the attachment.origin path
TRANSCRIPT_332 = FIX / "claude-2.1.332-transcript-reappend.jsonl"  # a busy session's queue-operation enqueues
THREAD = "01a22ecc-17f7-7ab1-b82a-e849cb4be152"  # the recorded rollout's thread
PAYLOAD = "[relay/1 from=op to=beta id=op-1 hop=0 want=none] replayed"


def _log(delivery: Delivery, tmp_path: Path) -> StageLog:
    return StageLog(delivery, Ledger(tmp_path / "ledger.sqlite"))


# -- codex-queue -----------------------------------------------------------------------------------


def _codex(tmp_path: Path, *, fail: str | None = None) -> tuple[DurableQueueTransport, Target, Path]:
    home = replay.codex_home_from(QUEUE, tmp_path / "codex")
    rollout = home / "sessions" / "2026" / "11" / "30" / f"rollout-2026-11-30T23-30-57-{THREAD}.jsonl"
    rollout.parent.mkdir(parents=True)
    shutil.copy(ROLLOUT, rollout)
    cli = replay.codex_cli(tmp_path / "bin", fail=fail)
    target = Target(kind="codex", prefix="codex", name="beta", address=THREAD, pid=None, live=True, state="idle",
                    transports=("codex-queue",), identified_by="replay", detail={"codex_home": str(home)})
    return DurableQueueTransport("codex-queue", binary=str(cli)), target, rollout


async def test_codex_queue_send_reads_back_its_row_and_confirms_the_queue_turn(tmp_path):
    t, target, rollout = _codex(tmp_path)
    home = Path(str(target.detail.codex_home))
    d = Delivery(target=target.spec, transport=t.name)
    log = _log(d, tmp_path)
    await approved_send(t, d, target, PAYLOAD, log)
    assert d.state == DeliveryState.QUEUED and d.stage == "enqueue"
    rows = replay.queue_rows(home)
    assert [r["id"] for r in rows] == [d.extra.item_id]
    # the read-back found OUR row (by item id) and its client_id
    assert d.extra.client_id == json.loads(rows[0]["payload_json"])["UserInput"]["client_id"]
    assert d.evidence[-1].data["row"]["thread_id"] == THREAD and d.evidence[-1].data["row"]["ahead"] == 0

    # pending: confirm waits, says where it is, never claims delivery
    await t.confirm(d, target, PAYLOAD, log, timeout=0.3)
    assert d.state == DeliveryState.QUEUED and "still pending in the queue" in (d.reason or "")

    turn = replay.take_queued_item(home, d.extra.item_id, rollout, ROLLOUT)
    d.reason = None
    await t.confirm(d, target, PAYLOAD, log, timeout=5)
    assert [e.state for e in d.evidence[-2:]] == [DeliveryState.DEQUEUED, DeliveryState.IN_TURN]
    assert d.evidence[-1].data["turn_id"] == turn and d.evidence[-1].data["client_id"] == d.extra.client_id


async def test_codex_queue_confirm_reads_its_row_once_for_the_first_poll(tmp_path, monkeypatch):
    """Issue 33: the confirm read our row in a first look (is anyone taking it?) and read it again a
    moment later in the first poll, each in its own worker-thread hop; the first look is now the first
    poll. An item taken before the confirm: one hop, one row read (old code: two of each; it fails this)."""
    import anyio.to_thread

    t, target, rollout = _codex(tmp_path)
    d = Delivery(target=target.spec, transport=t.name)
    log = _log(d, tmp_path)
    await approved_send(t, d, target, PAYLOAD, log)
    replay.take_queued_item(Path(str(target.detail.codex_home)), d.extra.item_id, rollout, ROLLOUT)
    hops: list[object] = []
    real_hop = anyio.to_thread.run_sync

    async def hop(fn, *a, **kw):
        hops.append(fn)
        return await real_hop(fn, *a, **kw)

    monkeypatch.setattr(anyio.to_thread, "run_sync", hop)
    await t.confirm(d, target, PAYLOAD, log, timeout=5)
    assert [e.state for e in d.evidence[-2:]] == [DeliveryState.DEQUEUED, DeliveryState.IN_TURN]
    assert len(hops) == 1, hops


async def test_codex_queue_a_turn_of_another_trigger_is_not_delivery(tmp_path):
    t, target, rollout = _codex(tmp_path)
    d = Delivery(target=target.spec, transport=t.name)
    log = _log(d, tmp_path)
    await approved_send(t, d, target, PAYLOAD, log)
    replay.take_queued_item(Path(str(target.detail.codex_home)), d.extra.item_id, rollout, ROLLOUT, trigger="user")
    await t.confirm(d, target, PAYLOAD, log, timeout=5)
    assert d.state == DeliveryState.UNKNOWN and "not queue" in d.evidence[-1].detail


async def test_codex_queue_failure_and_refusals(tmp_path):
    t, target, _ = _codex(tmp_path, fail=replay.UNKNOWN_THREAD.format(thread=THREAD))
    d = Delivery(target=target.spec, transport=t.name)
    await approved_send(t, d, target, PAYLOAD, _log(d, tmp_path))
    assert d.state == DeliveryState.FAILED and "no rollout found for thread id" in d.evidence[-1].detail
    assert replay.queue_rows(Path(str(target.detail.codex_home))) == []
    assert t.refusal(target) is None
    assert "has no thread uuid" in t.refusal(target.model_copy(update={"address": "beta"}))
    assert "no rollout yet" in t.refusal(target.model_copy(update={"detail": target.detail.model_copy(update={"queue_note": "no rollout yet"})}))
    assert "does not offer codex-queue" in t.refusal(target.model_copy(update={"transports": ("tmux",)}))


# -- Claude socket ---------------------------------------------------------------------------------


@pytest.fixture
def claude(tmp_path):
    """A registry record for THIS process (the replayed socket runs in it, so SO_PEERCRED is
    our pid) and its transcript path, derived as discovery derives it."""
    short = Path(tempfile.mkdtemp(prefix="rr-", dir="/tmp"))  # AF_UNIX paths are short
    cfg = tmp_path / "claude"
    (cfg / "sessions").mkdir(parents=True)
    sock = short / f"{os.getpid()}.sock"
    rec = {"pid": os.getpid(), "sessionId": str(uuid.uuid4()), "cwd": "/lab/lab/work/alpha",
           "procStart": proc_start(os.getpid()), "messagingSocketPath": str(sock), "name": "alpha"}
    record = cfg / "sessions" / f"{os.getpid()}.json"
    record.write_text(json.dumps(rec))
    tp = transcript_path(cfg, rec["cwd"], rec["sessionId"])
    tp.parent.mkdir(parents=True)
    tp.write_text("")
    target = Target(kind="claude-code", prefix="claude", name="alpha", address=str(sock), pid=os.getpid(), live=True,
                    state="idle", transports=("claude-code-socket",), identified_by="replay",
                    socket=str(sock), detail={"record": str(record)})
    yield target, sock, tp
    shutil.rmtree(short, ignore_errors=True)


@asynccontextmanager
async def socket_sent(tmp_path, claude, transcript, **replay_kw):
    """A Claude session replayed on its socket (`replay_kw`: busy, record, held) and one approved
    socket send to it: (session, transport, delivery, target, log); the replay closes after."""
    target, sock, tp = claude
    session = replay.ClaudeSessionReplay(sock, tp, transcript, **replay_kw)
    try:
        t = SocketTransport("claude-code-socket")
        d = Delivery(target=target.spec, transport=t.name)
        log = _log(d, tmp_path)
        await approved_send(t, d, target, PAYLOAD, log)
        yield session, t, d, target, log
    finally:
        session.close()


@pytest.mark.parametrize("busy", [False, True], ids=["idle-origin", "busy-attachment-origin"])
async def test_claude_socket_send_and_confirm_from_the_transcript(tmp_path, claude, busy):
    async with socket_sent(tmp_path, claude, TRANSCRIPT, busy=busy) as (session, t, d, target, log):
        assert d.state == DeliveryState.QUEUED and d.stage == "write"
        with anyio.fail_after(5):
            while not session.frames:
                await anyio.sleep(0.02)
        frame = session.frames[-1]
        assert frame["msg_id"] == d.extra.msg_id and frame["message"]["content"] == PAYLOAD
        assert frame["priority"] == "next"  # never "now" unless the operator asked to interrupt
        await t.confirm(d, target, PAYLOAD, log, timeout=5)
        assert d.state == DeliveryState.IN_TURN
        assert d.evidence[-1].data["record"]["where"] == ("attachment.origin" if busy else "origin")


async def test_claude_socket_no_record_is_not_delivery(tmp_path, claude):
    async with socket_sent(tmp_path, claude, TRANSCRIPT, record=False) as (_session, t, d, target, log):
        await t.confirm(d, target, PAYLOAD, log, timeout=0.5)
        assert d.state == DeliveryState.QUEUED and "do not re-send" in (d.reason or "")


async def test_claude_socket_confirm_reads_the_transcript_in_one_thread_hop_then_on_the_loop(tmp_path, claude, monkeypatch):
    """Issue 33: each poll handed the msg_id read and the held-payload read to a worker thread apart
    (two hops a poll while no record carried it); then one hop a poll did both; now only the first
    poll hops, the later ones read what was appended since on the event loop (old code: a hop per
    poll; it fails this)."""
    import anyio.to_thread

    async with socket_sent(tmp_path, claude, TRANSCRIPT, record=False) as (_session, t, d, target, log):
        wire = t.way_of(target)
        reads: list[str] = []
        hops: list[object] = []
        real_hop, real_records = anyio.to_thread.run_sync, type(wire).records

        async def hop(fn, *a, **kw):
            hops.append(fn)
            return await real_hop(fn, *a, **kw)

        monkeypatch.setattr(anyio.to_thread, "run_sync", hop)
        monkeypatch.setattr(type(wire), "records", lambda self, *a: reads.append("r") or real_records(self, *a))
        await t.confirm(d, target, PAYLOAD, log, timeout=0.5)
        assert d.state == DeliveryState.QUEUED and len(reads) >= 3 and len(hops) == 1


async def test_claude_socket_confirm_reads_in_a_thread_first_and_after_a_large_append(tmp_path, claude, monkeypatch):
    """Issue 33: a poll after the first reads only what the receiver appended since (the wire's scans
    remember where they stopped), so it reads on the event loop: the thread hop cost more than the read.
    The first poll (a new question: the whole transcript) and a poll after more than INLINE_READ was
    appended still hop. Old code fails it: one hop per poll."""
    import anyio.to_thread

    from relay_repl.transports import socket_message

    async with socket_sent(tmp_path, claude, TRANSCRIPT, record=False) as (_session, t, d, target, log):
        _t, _sock, tp = claude
        wire = t.way_of(target)
        polls: list[str] = []
        real_hop, real_records = anyio.to_thread.run_sync, type(wire).records
        in_thread = False

        async def hop(fn, *a, **kw):
            nonlocal in_thread
            in_thread = True
            try:
                return await real_hop(fn, *a, **kw)
            finally:
                in_thread = False

        def records(self, *a):
            polls.append("thread" if in_thread else "loop")
            return real_records(self, *a)

        async def receiver_writes_a_large_record_after_the_third_poll():
            while len(polls) < 3:
                await anyio.sleep(0.005)
            with open(tp, "a") as f:  # the confirm sleeps >= 0.15 s after its 3rd poll
                f.write(json.dumps({"type": "assistant", "x": "y" * (socket_message.INLINE_READ + 10)}) + "\n")

        monkeypatch.setattr(anyio.to_thread, "run_sync", hop)
        monkeypatch.setattr(type(wire), "records", records)
        async with anyio.create_task_group() as tg:
            tg.start_soon(receiver_writes_a_large_record_after_the_third_poll)
            await t.confirm(d, target, PAYLOAD, log, timeout=1.0)
        assert d.state == DeliveryState.QUEUED and len(polls) >= 6, polls
        assert polls[:5] == ["thread", "loop", "loop", "thread", "loop"] and set(polls[5:]) == {"loop"}


async def test_claude_socket_confirm_reads_less_often_the_longer_the_receiver_waits(tmp_path, claude, monkeypatch):
    """Issue 33: the confirm read the receiver's transcript every 0.1 s however long the wait (21 reads in
    2 s); now the sleeps grow by half to CONFIRM_POLL_MAX (0.2 s), so a long wait costs about half the
    reads, and the first read still comes 0.1 s after the write (old code fails the count)."""
    from relay_repl.transports.base import CONFIRM_POLL_MAX

    async with socket_sent(tmp_path, claude, TRANSCRIPT, record=False) as (_session, t, d, target, log):
        wire = t.way_of(target)
        reads: list[float] = []
        real_records = type(wire).records
        monkeypatch.setattr(type(wire), "records", lambda self, *a: reads.append(time.monotonic())
                            or real_records(self, *a))
        await t.confirm(d, target, PAYLOAD, log, timeout=2.0)
    assert d.state == DeliveryState.QUEUED and 8 <= len(reads) <= 14, reads
    gaps = [b - a for a, b in zip(reads, reads[1:])]
    assert gaps[0] < CONFIRM_POLL_MAX and max(gaps[2:-1]) >= CONFIRM_POLL_MAX - 0.01


async def test_claude_socket_reads_a_queue_operation_enqueue_as_queued(tmp_path, claude):
    """Issue 38: to a busy Claude, relay said `written, but no transcript record` although Claude had
    written a queue-operation enqueue holding the exact envelope (0.7 s after the write). The socket path
    now reads it as the tmux path does: queued, and no further (no turn took it: not in_turn)."""
    async with socket_sent(tmp_path, claude, TRANSCRIPT_332, held=True) as (_session, t, d, target, log):
        await t.confirm(d, target, PAYLOAD, log, timeout=1.0)
        assert d.state == DeliveryState.QUEUED and d.outcome == "pending"
        ev = d.evidence[-1]
        assert ev.stage == "transcript" and ev.state == DeliveryState.QUEUED
        assert ev.data["record"]["where"] == "queue-operation enqueue" and ev.data["record"]["content"] == PAYLOAD
        assert d.reason.startswith("queued: claude:alpha's transcript holds exactly this payload") and \
            "no transcript record" not in d.reason
        assert [e.stage for e in d.evidence].count("transcript") == 1  # said once, not once per poll


def test_the_recorded_enqueue_is_read_by_its_exact_content():
    """Over the recorded 2.1.332 transcript: the enqueue of relay id ...9023-2 is found by its whole
    envelope, and a prefix or a stranger's text is not."""
    from relay_repl.agents.claude_code.evidence import queued_records

    env = ("[relay/1 from=operator:relay@operator.vm.9023 to=peer id=operator.vm.9023-2 hop=0 want=none] "
           "a delivery for the read-only commands to read (1)")
    assert [h["where"] for h in queued_records(TRANSCRIPT_332, env)] == ["queue-operation enqueue"]
    assert queued_records(TRANSCRIPT_332, env[:-3]) == [] and queued_records(TRANSCRIPT_332, "hello") == []


async def test_claude_socket_refuses_a_socket_served_by_another_pid(tmp_path, claude):
    target, sock, tp = claude
    session = replay.ClaudeSessionReplay(sock, tp, TRANSCRIPT)
    try:
        t = SocketTransport("claude-code-socket")
        other = target.model_copy(update={"pid": 1})
        d = Delivery(target=target.spec, transport=t.name)
        await approved_send(t, d, other, PAYLOAD, _log(d, tmp_path))
        assert d.state == DeliveryState.REFUSED and "socket owner does not match" in (d.reason or "")
        assert session.frames == []  # nothing was written
        assert "does not offer claude-code-socket" in t.refusal(target.model_copy(update={"transports": ("tmux",)}))
    finally:
        session.close()


async def test_codex_queue_runs_the_binary_behind_the_npm_wrapper(tmp_path):
    """`codex queue` through the Node wrapper cost ~170 ms of Node start on every send: the
    transport runs the binary the wrapper would exec (here the wrapper itself would fail)."""
    from tests.agents.test_codex_native import LINUX_X64, npm_layout

    if (os.uname().sysname, os.uname().machine) != LINUX_X64:
        pytest.skip("the layout below is the linux-x64 one")
    t, target, _ = _codex(tmp_path)
    wrapper = npm_layout(tmp_path / "npm", binary=Path(t.binary or "").read_text())
    t = DurableQueueTransport("codex-queue", binary=str(wrapper))
    d = Delivery(target=target.spec, transport=t.name)
    await approved_send(t, d, target, PAYLOAD, _log(d, tmp_path))
    assert d.state == DeliveryState.QUEUED, d.reason
    assert [r["id"] for r in replay.queue_rows(Path(target.detail.codex_home))] == [d.extra.item_id]
