"""codex-queue: Codex's durable queue (`codex queue --thread <uuid> --message <line>`).

Why this shape (codex.md section 3, seed section 7):
- Always by uuid after resolution: `--thread` also takes names, and a name can
  be ambiguous or renamed between discovery and send.
- The CLI prints the item id; we read back *that* row, never "the latest row
  for the thread", because a backlog would make us confirm someone else's item.
- The queue file is opened read-only and its schema introspected: the schema
  has drifted across Codex versions (ANCHORS C.5); a `state` column, where it
  exists, distinguishes pending from claimed/failed.
- A row gone proves dequeue, not delivery. Delivery is the rollout's
  `UserMessage` with our row's `client_id` (or, if the row was consumed before
  we could read it, our exact payload, which carries a unique relay id) in a
  turn whose trigger is `queue`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools
import os
import re
from typing import Any

from relay_repl.core.approval import Approval
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.codex import (RolloutScan, codex_command_env, codex_home, find_in_rollout, read_item, rollout_path,
                                     turns_since)
from relay_repl.core.target import Target
from relay_repl.system.polling import poll_until
from relay_repl.transports.base import Capabilities, Look, StageLog, Transport

if TYPE_CHECKING:
    from relay_repl.transports.registry import TransportContext

QUEUED = re.compile(r"Queued message (?P<item>[0-9a-fA-F-]{36}) for thread (?P<thread>[0-9a-fA-F-]{36})\.")


class CodexQueueTransport(Transport):
    name = "codex-queue"
    capabilities = Capabilities(durable=True)
    relies_on = "the queue schema, rollout records and daemon protocol were"

    @classmethod
    def from_context(cls, ctx: TransportContext) -> CodexQueueTransport:
        """The `relay_repl.transports` entry point's factory."""
        return cls()

    def __init__(self, codex_bin: str | None = None) -> None:
        self.codex_bin = codex_bin

    def _bin(self) -> str:
        import shutil

        return self.codex_bin or os.environ.get("RELAY_CODEX_BIN") or shutil.which("codex") or "codex"

    def refusal(self, target: Target) -> str | None:
        # Durable: a thread that is not loaded still keeps the row until resumed,
        # so liveness is not required, but the thread must exist with a rollout.
        if self.name not in target.transports:
            return f"{target.spec} does not offer {self.name} (its agent lists {', '.join(target.transports) or 'none'})"
        if not re.fullmatch(r"[0-9a-fA-F-]{36}", target.address):
            return f"{target.spec} has no thread uuid"
        note = CodexDetail.of(target).queue_note
        if note:
            return note
        return self.version_refusal(target)

    def plan_notes(self, target: Target) -> tuple[str, ...]:
        notes = []
        if target.state == "never-idle":
            notes.append("goal-controller thread: the queue item runs at the next turn boundary, ahead of the goal continuation")
        if CodexDetail.of(target).plan_mode:
            notes.append("target is in Plan mode: Codex 0.169.0 still runs the queued message, but as a planning turn "
                         "(the agent plans and does not change files)")
        if not target.live:
            notes.append("thread is not loaded: the item waits until it is resumed (`codex resume`)")
        elif target.state == "busy":
            notes.append("target is busy: the item waits for its next idle transition (one item per turn)")
        return tuple(notes)

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        return (
            f"the rollout of thread {target.address} shows a turn with trigger `queue` whose user message is our queue "
            "item's client_id (exactly this payload); the row leaving queue_1.sqlite only proves dequeue"
        )

    async def send(self, delivery: Delivery, target: Target, payload: str, log: StageLog, *,
                   approval: Approval | None = None) -> None:
        import anyio

        self.require(approval, target, payload, f"codex queue insert for {target.spec}")

        home = codex_home(target)
        # the npm `codex` is a Node wrapper: run the binary it would exec (~170 ms less, agents/codex/native.py)
        exe, env = codex_command_env(self._bin(), {**os.environ, "CODEX_HOME": str(home)})
        cmd = [exe, "queue", "--thread", target.address, "--message", payload]
        log.checkpoint("enqueue")  # a relay-halt that arrived since the gate stops it here
        res = await anyio.run_process(cmd, check=False, env=env)
        out = res.stdout.decode(errors="replace")
        err = res.stderr.decode(errors="replace")
        m = QUEUED.search(out)
        if res.returncode != 0 or not m:
            first = next((ln for ln in err.splitlines() if ln.startswith("Error:")), err.strip().splitlines()[-1:] or ["?"])
            reason = first if isinstance(first, str) else first[0]
            log.fail("enqueue", f"codex queue exited {res.returncode}: {reason}", stderr=err[-2000:])
            return
        if m.group("thread").lower() != target.address.lower():
            log.fail("enqueue", f"codex queue answered for thread {m.group('thread')}, not {target.address}")
            return
        delivery.extra.item_id = m.group("item")
        row = read_item(home, m.group("item"))
        if row:
            delivery.extra.client_id = row["client_id"]
        log("enqueue", DeliveryState.QUEUED, f"queued as item {m.group('item')}", item_id=m.group("item"),
            row=row, stdout=out.strip())

    async def look(self, delivery: Delivery, target: Target, payload: str) -> Look:
        """The queue row of our item (read-only) and the rollout's turns since the send."""
        import anyio

        home = codex_home(target)
        item = delivery.extra.item_id
        if not item:
            return Look(transport=self.name, landed=None,
                        verdict="no queue item id was recorded: `codex queue` never printed one, nothing was queued")
        row = await anyio.to_thread.run_sync(read_item, home, item)
        rollout = rollout_path(home, target.address, target.evidence_file)
        client_id = (row or {}).get("client_id") or delivery.extra.client_id
        hit = await anyio.to_thread.run_sync(
            lambda: find_in_rollout(rollout, client_id=client_id, text=payload)) if rollout else None
        turns = await anyio.to_thread.run_sync(turns_since, rollout, delivery.started) if rollout else []
        data: dict[str, Any] = {"queue item": item, "queue file": str(home / "queue_1.sqlite"),
                                "rollout": str(rollout) if rollout else "none found"}
        if row is not None:
            data["queue row"] = row
            verdict = (f"still in the queue (state {row['state']}, {row['ahead']} ahead): not taken yet" if
                       row["state"] != "failed" else f"Codex marked the item failed: {row['failure']}")
            landed: bool | None = False
        elif hit:
            landed = hit["turn_trigger"] == "queue"
            verdict = (f"landed: rollout turn {hit['turn_id']} (trigger {hit['turn_trigger']}) carries our message"
                       if landed else f"our text is in turn {hit['turn_id']} but its trigger is {hit['turn_trigger']!r}")
        else:
            landed = None if rollout is None else False
            verdict = "dequeued (the row is gone) but no turn carrying it is in the rollout yet"
        return Look(transport=self.name, landed=landed, verdict=verdict, data=data,
                    records=[{"turn": t} for t in turns] + ([{"match": hit}] if hit else []))

    async def confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float) -> None:
        import anyio

        home = codex_home(target)
        item = delivery.extra.item_id
        if not item:
            return
        dequeued = False
        last: dict[str, Any] = {"row": None}  # the latest read-back, for the progress line and the timeout
        scans: dict[str, RolloutScan] = {}  # per rollout: reads only what it appended since the last poll

        async def check() -> bool | None:
            """True once the wait is over (a failed item or a turn carrying it), else None."""
            nonlocal dequeued
            row = last["row"] = await anyio.to_thread.run_sync(read_item, home, item)
            if row is not None:
                delivery.extra.client_id = row["client_id"] or delivery.extra.client_id
                if row["state"] == "failed":
                    log.fail("readback", f"Codex marked queue item {item} failed: {row['failure']}", row=row)
                    return True
                return None
            if not dequeued:
                dequeued = True
                log("readback", DeliveryState.DEQUEUED, f"item {item} left queue_1.sqlite (dequeued, not yet seen in a turn)")
            rollout = rollout_path(home, target.address, target.evidence_file)
            scan = scans.setdefault(str(rollout), RolloutScan(rollout)) if rollout else None
            hit = await anyio.to_thread.run_sync(
                functools.partial(scan.find, client_id=delivery.extra.client_id, text=payload)
            ) if scan else None
            if not hit:
                return None
            if hit["turn_trigger"] == "queue":
                log("turn", DeliveryState.IN_TURN, f"rollout turn {hit['turn_id']} (trigger queue) carries our message",
                    rollout=str(rollout), **hit)
            else:
                log("turn", DeliveryState.UNKNOWN,
                    f"our text is in turn {hit['turn_id']} but its trigger is {hit['turn_trigger']!r}, not queue",
                    rollout=str(rollout), **hit)
            return True

        def progress(_left: float) -> None:
            row = last["row"]
            log.progress(f"waiting for Codex to take item {item} ({'in queue, %d ahead' % row['ahead'] if row else 'dequeued'})")

        # Polls start at 20 ms and grow by half up to 100 ms: an idle Codex takes the item within a
        # few hundred ms, and a fixed 100 ms poll added ~50 ms to every delivery on average (issue
        # 20); the growth keeps a long wait (a busy target) at 10 polls/s.
        if await poll_until(check, timeout=timeout, interval=0.02, max_interval=0.1, progress=progress) is None:
            row = last["row"]
            where = (f"still pending in the queue ({row['ahead']} ahead, state {row['state']})" if row
                     else "dequeued, but no turn carrying it is in the rollout yet")
            delivery.reason = f"{where} after {timeout:.0f}s; `relay why {delivery.relay_id}` later, never re-send"
            if row:
                log("readback", DeliveryState.QUEUED, where, row=row)
