"""A durable queue in front of an agent's thread: the queue transport, generic over the kind.

The command that enqueues, what it prints, the queue's schema and which turn in the
receiver's own record proves a delivery are the kind's facts, asked of the target's kind
(`AgentKind.transports.durable_queue()`, agents/durable_queue.py; Codex's: agents/codex/queue_ops.py).
The transport's name is its entry point's (`codex-queue` in pyproject.toml) and its capability
flags are the ones the kind's adapter declares for that name.

What this module does for any such kind:
- the enqueue runs only under the gate's approval, after the halt checkpoint: the kind's own
  call to the queue's host when it answers (`enqueue`: Codex's daemon, no process started),
  else its command;
- the item id the call answered or the command printed is read back, *that* row, never "the
  latest row" (and it must carry the client id the call chose);
- a row gone proves dequeue, not delivery: delivery is the record's turn carrying our item
  (its client id, else our exact payload, which carries a unique relay id), started by the queue.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.agents.durable_queue import DurableQueue, ItemReader, RecordScan
from relay_repl.core.approval import Approval
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target
from relay_repl.system.polling import poll_until
from relay_repl.transports.base import CONFIRM_POLL_MAX, Look, StageLog
from relay_repl.transports.offered import KindWayTransport

if TYPE_CHECKING:
    from relay_repl.agents.kind import AgentKind
    from relay_repl.transports.registry import TransportContext


class _EachTime:
    """An ItemReader that reads with `read_item` each time (a kind without `item_reader`)."""

    def __init__(self, queue: DurableQueue, target: Target) -> None:
        self.queue, self.target = queue, target

    def read(self, item_id: str) -> dict[str, Any] | None:
        return self.queue.read_item(self.target, item_id)

    def close(self) -> None:
        pass


class DurableQueueTransport(KindWayTransport[DurableQueue]):
    """One item put in the target thread's durable queue, confirmed from its own record."""

    way_noun = "durable queue"

    @staticmethod
    def way(kind: AgentKind) -> DurableQueue | None:
        return kind.transports.durable_queue()

    @classmethod
    def from_context(cls, ctx: TransportContext) -> DurableQueueTransport:
        """The `relay_repl.transports` entry point's factory."""
        return cls(ctx.name, defer=True)

    def __init__(self, name: str, binary: str | None = None, *, defer: bool = False) -> None:
        """`name`: the transport (an adapter's `[[transports]]` entry of a kind with a durable queue);
        `binary`: the client to run for the enqueue command (else the kind's own lookup);
        `defer`: see KindWayTransport."""
        super().__init__(name, defer=defer)
        self.binary = binary

    def refusal(self, target: Target) -> str | None:
        # Durable: a thread that is not loaded still keeps the row until resumed, so liveness
        # is not required (the base check is not asked), but the kind may refuse the thread.
        return self.way_refusal(target) or self.way_of(target).refusal(target) or self.version_refusal(target)

    def plan_notes(self, target: Target) -> tuple[str, ...]:
        return self.way_of(target).notes(target)

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        return self.way_of(target).delivered_when(target)

    async def send(self, delivery: Delivery, target: Target, payload: str, log: StageLog, *,
                   approval: Approval | None = None) -> None:
        import anyio

        queue = self.way_of(target)
        self.require(approval, target, payload, f"{queue.command_name} insert for {target.spec}")
        log.checkpoint("enqueue")  # a relay-halt that arrived since the gate stops it here
        # the queue's host first (no process: issue 17's ask-all was CPU-bound); an explicit
        # binary is the client the caller asked to run
        got = await queue.enqueue(target, payload) if self.binary is None else None
        out = err = ""
        if got is None:
            cmd = queue.command(target, payload, self.binary, os.environ)
            res = await anyio.run_process(list(cmd.argv), check=False, env=cmd.env)
            out = res.stdout.decode(errors="replace")
            err = res.stderr.decode(errors="replace")
            got = queue.enqueued(target, res.returncode, out, err)
        if got.item_id is None:
            log.fail("enqueue", got.failure or f"{queue.command_name} printed no item id", stderr=err[-2000:])
            return
        delivery.extra.item_id = got.item_id
        row = queue.read_item(target, got.item_id)
        if row and got.client_id and row["client_id"] != got.client_id:
            log.fail("enqueue", f"queue item {got.item_id} carries client id {row['client_id']!r}, not the "
                     f"{got.client_id!r} it was added with", item_id=got.item_id, row=row)
            return
        delivery.extra.client_id = (row["client_id"] if row else None) or got.client_id
        how = f" ({got.via})" if got.via else ""
        gone = await anyio.to_thread.run_sync(self._taker_gone, queue, target)
        log("enqueue", DeliveryState.QUEUED, f"queued as item {got.item_id}{how}" + (f"; but {gone}" if gone else ""),
            item_id=got.item_id, row=row, stdout=out.strip(), via=got.via or queue.command_name, taker_gone=gone)

    @staticmethod
    def _item_reader(queue: DurableQueue, target: Target) -> ItemReader:
        """The kind's reader kept across a confirm's polls (DurableQueue.item_reader), else `read_item` each time."""
        make = getattr(queue, "item_reader", None)
        return make(target) if make is not None else _EachTime(queue, target)

    @staticmethod
    def _taker_gone(queue: DurableQueue, target: Target) -> str | None:
        """The kind's reason no process will take the item now (DurableQueue.taker_gone), if it has one."""
        ask = getattr(queue, "taker_gone", None)
        return ask(target) if ask is not None else None

    async def look(self, delivery: Delivery, target: Target, payload: str) -> Look:
        """The queue row of our item (read-only) and the record's turns since the send."""
        import anyio

        item = delivery.extra.item_id
        queue = self.way_of(target)
        if not item:
            return Look(transport=self.name, landed=None,
                        verdict=f"no queue item id was recorded: `{queue.command_name}` never printed one, nothing was queued")
        name = self.evidence_name(target)
        row = await anyio.to_thread.run_sync(queue.read_item, target, item)
        record = queue.record_file(target)
        client_id = (row or {}).get("client_id") or delivery.extra.client_id
        hit = await anyio.to_thread.run_sync(
            lambda: queue.find(record, client_id=client_id, text=payload)) if record else None
        turns = await anyio.to_thread.run_sync(queue.turns_since, record, delivery.started) if record else []
        waiting: bool | None = None
        data: dict[str, Any] = {"queue item": item, "queue file": str(queue.queue_file(target)),
                                name: str(record) if record else "none found"}
        if row is not None:
            data["queue row"] = row
            verdict = (f"still in the queue (state {row['state']}, {row['ahead']} ahead): not taken yet" if
                       row["state"] != "failed" else f"{self.label(target)} marked the item failed: {row['failure']}")
            landed: bool | None = False
            waiting = row["state"] != "failed"
        elif hit:
            landed = queue.from_queue(hit)
            verdict = (f"landed: {name} turn {hit['turn_id']} (trigger {hit['turn_trigger']}) carries our message"
                       if landed else f"our text is in turn {hit['turn_id']} but its trigger is {hit['turn_trigger']!r}")
        else:
            landed = None if record is None else False
            verdict = f"dequeued (the row is gone) but no turn carrying it is in the {name} yet"
        return Look(transport=self.name, landed=landed, waiting=waiting, verdict=verdict, data=data,
                    records=[{"turn": t} for t in turns] + ([{"match": hit}] if hit else []))

    async def confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float) -> None:
        if not delivery.extra.item_id:
            return
        reader = self._item_reader(self.way_of(target), target)  # one connection for every read of our row (issue 33)
        try:
            await self._confirm(delivery, target, payload, log, timeout, reader)
        finally:
            reader.close()

    async def _confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float,
                       reader: ItemReader) -> None:
        import anyio

        item = delivery.extra.item_id
        assert item is not None
        queue = self.way_of(target)
        name = self.evidence_name(target)
        queue_file = queue.queue_file(target).name
        label = self.label(target)

        dequeued = False
        last: dict[str, Any] = {"row": None}  # the latest read-back, for the progress line and the timeout
        scans: dict[str, RecordScan] = {}  # per record file: reads only what it appended since the last poll
        def look_once(client_id: str | None) -> tuple[dict[str, Any] | None, Path | None, dict[str, Any] | None]:
            """One poll, in one worker thread: our row; once it is gone, the record's new lines."""
            row = reader.read(item)
            if row is not None:
                return row, None, None
            record = queue.record_file(target)
            scan = scans.setdefault(str(record), queue.scan(record)) if record else None
            return None, record, (scan.find(client_id=client_id, text=payload) if scan else None)

        Looked = tuple[dict[str, Any] | None, Path | None, dict[str, Any] | None]

        def first_look(client_id: str | None) -> tuple[Looked, str | None]:
            """The first poll and, while the row is there, whether anyone will take it: one hop, one
            read of the row (issue 33: the first poll read the row again a moment later, in a second hop)."""
            looked = look_once(client_id)
            return looked, (self._taker_gone(queue, target) if looked[0] is not None else None)

        looked0, gone = await anyio.to_thread.run_sync(first_look, delivery.extra.client_id)
        row0 = looked0[0]
        if gone and row0 is not None and row0["state"] != "failed":
            # the queue accepted it (`codex queue` exits 0 for a thread nobody runs): waiting out the
            # timeout would prove nothing more; it stays queued, with the reason, never delivered
            delivery.reason = f"still pending in the queue: {gone}; `relay why {delivery.relay_id}` later, never re-send"
            log("readback", DeliveryState.QUEUED, f"item {item} is still in {queue_file} and {gone}", row=row0,
                taker_gone=gone)
            return
        first: list[Looked] = [looked0]  # what the first check reads: the first look, taken just now

        async def check() -> bool | None:
            """True once the wait is over (a failed item or a turn carrying it), else None."""
            nonlocal dequeued
            row, record, hit = first.pop() if first else await anyio.to_thread.run_sync(look_once, delivery.extra.client_id)
            last["row"] = row
            if row is not None:
                delivery.extra.client_id = row["client_id"] or delivery.extra.client_id
                if row["state"] == "failed":
                    log.fail("readback", f"{label} marked queue item {item} failed: {row['failure']}", row=row)
                    return True
                return None
            if dequeued and not hit:
                return None  # nothing new to record
            with log.together():  # the item gone and the turn carrying it, seen in one poll: one commit
                if not dequeued:
                    dequeued = True
                    log("readback", DeliveryState.DEQUEUED, f"item {item} left {queue_file} (dequeued, not yet seen in a turn)")
                if not hit:
                    return None
                if queue.from_queue(hit):
                    log("turn", DeliveryState.IN_TURN, f"{name} turn {hit['turn_id']} (trigger {hit['turn_trigger']}) carries our message",
                        **{name: str(record)}, **hit)
                else:
                    log("turn", DeliveryState.UNKNOWN,
                        f"our text is in turn {hit['turn_id']} but its trigger is {hit['turn_trigger']!r}, not queue",
                        **{name: str(record)}, **hit)
                return True

        def progress(_left: float) -> None:
            row = last["row"]
            log.progress(f"waiting for {label} to take item {item} ({'in queue, %d ahead' % row['ahead'] if row else 'dequeued'})")

        # Polls start at 20 ms and grow by half up to CONFIRM_POLL_MAX (0.2 s): an idle receiver takes the
        # item within a few hundred ms, and a fixed 100 ms poll added ~50 ms to every delivery on average
        # (issue 20); the growth keeps a long wait (a busy target) at 5 polls/s, each a worker-thread hop
        # (10 before: relay's own CPU per send grew with the receiver's wait, issue 33).
        if await poll_until(check, timeout=timeout, interval=0.02, max_interval=CONFIRM_POLL_MAX,
                            progress=progress) is None:
            row = last["row"]
            where = (f"still pending in the queue ({row['ahead']} ahead, state {row['state']})" if row
                     else f"dequeued, but no turn carrying it is in the {name} yet")
            delivery.reason = f"{where} after {timeout:.0f}s; `relay why {delivery.relay_id}` later, never re-send"
            if row:
                log("readback", DeliveryState.QUEUED, where, row=row)
