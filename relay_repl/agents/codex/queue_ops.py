"""Codex's durable queue, as the generic queue transport needs it (agents/durable_queue.py).

Facts this holds (codex.md section 3, seed section 7):
- `codex queue --thread <uuid> --message <line>`, always by uuid after resolution: `--thread`
  also takes names, and a name can be ambiguous or renamed between discovery and send. It
  prints `Queued message <item> for thread <thread>.`; we read back *that* row, never "the
  latest row for the thread", because a backlog would make us confirm someone else's item.
- How: `codex queue` connects to the daemon's control socket and calls `thread/queue/add`
  (codex.md §3.1, §3.5); relay makes that call itself when the daemon answers on the socket
  (`enqueue`), with its own `clientUserMessageId`, so no process starts for a send: the CLI
  cost 0.040 CPU-s and 69 ms per send, the call 0.002 CPU-s and 14 ms (median of 6 each, in
  turn, load 3.6; issue 17: four of these in every 4+4 ask-all). The command runs instead when
  nothing could be asked (no socket, a refused connection or `initialize`, a daemon that does
  not know the method): without a daemon it still writes the row.
- The binary: `RELAY_CODEX_BIN`, else `codex` on PATH; the npm `codex` is a Node wrapper, so
  the binary it would exec is run instead (~170 ms less, native.py), with the target's CODEX_HOME.
- The queue file (`queue_1.sqlite`) is opened read-only and its schema introspected: the
  schema has drifted across Codex versions (ANCHORS C.5); a `state` column, where it exists,
  distinguishes pending from claimed/failed.
- A row gone proves dequeue, not delivery. Delivery is the rollout's `UserMessage` with our
  row's `client_id` (or, if the row was consumed before we could read it, our exact payload,
  which carries a unique relay id) in a turn whose trigger is `queue`.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relay_repl.agents.adapter import load_adapter
from relay_repl.agents.codex.agent import BINARY, KIND
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.codex.daemon import NotAsked, kept_call
from relay_repl.agents.codex.evidence import (QueueReader, RolloutScan, codex_home, databases, find_in_rollout, read_item,
                                              turns_since)
from relay_repl.agents.codex.native import codex_command_env
from relay_repl.agents.codex.plan_words import (QUEUE_FILE, QUEUE_RELIES_ON, THREAD_ID, queue_delivered_when, queue_notes,
                                                queue_refusal)
from relay_repl.agents.codex.rollout import rollout_path
from relay_repl.agents.durable_queue import Enqueued, EnqueueCommand
from relay_repl.core.errors import DaemonError
from relay_repl.core.target import Target

BINARY_ENV = "RELAY_CODEX_BIN"
"""An explicit `codex` to run for `codex queue` (else the one on PATH)."""
QUEUED = re.compile(r"Queued message (?P<item>[0-9a-fA-F-]{36}) for thread (?P<thread>[0-9a-fA-F-]{36})\.")
ADD_TIMEOUT = 10.0
"""Seconds for the daemon's `thread/queue/add` answer (the connection and the call)."""
METHOD_NOT_FOUND = -32601


class CodexQueue:
    """`DurableQueue` for `codex queue` and Codex's queue_1.sqlite / rollouts."""

    relies_on = QUEUE_RELIES_ON
    command_name = "codex queue"

    # the plan's words have one home, plan_words.py (standard library: `relay send`'s plain pre-plan reads them too)
    def refusal(self, target: Target) -> str | None:
        return queue_refusal(target.spec, target.address, CodexDetail.of(target).queue_note)

    def notes(self, target: Target) -> tuple[str, ...]:
        return queue_notes(target.state, target.live, CodexDetail.of(target).plan_mode)

    def delivered_when(self, target: Target) -> str:
        return queue_delivered_when(target.address)

    def command(self, target: Target, payload: str, binary: str | None, env: Mapping[str, str]) -> EnqueueCommand:
        chosen = binary or env.get(BINARY_ENV) or shutil.which(BINARY) or BINARY
        exe, full = codex_command_env(chosen, {**env, "CODEX_HOME": str(codex_home(target))})
        return EnqueueCommand(argv=(exe, "queue", "--thread", target.address, "--message", payload), env=full)

    async def enqueue(self, target: Target, payload: str) -> Enqueued | None:
        """`thread/queue/add` on the daemon's control socket, the call `codex queue` makes: our
        item id (and the client id we chose), or the failure the daemon answered; None when nothing
        was asked (no socket, a refused connection or `initialize`, the method unknown): then the command
        runs. A daemon that does not answer within ADD_TIMEOUT is a failure, as `codex queue` makes it.
        Once the request may have left, a lost answer is a failure (the item may be queued), never None.
        The connection is the daemon's kept one (daemon.kept_call): one per daemon per event loop."""
        sock = codex_home(target) / load_adapter(KIND).registry.paths["control_socket"]
        if not sock.exists():
            return None
        client_id = f"relay-{uuid.uuid4()}"
        params = {"threadId": target.address, "clientUserMessageId": client_id,
                  "input": [{"type": "text", "text": payload, "text_elements": []}]}
        try:
            answer = await kept_call(sock, "thread/queue/add", params, timeout=ADD_TIMEOUT, title="relay_repl codex-queue")
        except NotAsked as exc:
            if exc.timed_out:  # `codex queue` would wait as long and refuse
                return Enqueued(failure=f"the Codex daemon of {codex_home(target)} did not answer on its control socket "
                                f"within {ADD_TIMEOUT:g}s (starved or stopped): nothing was queued")
            return None
        except DaemonError as exc:
            return Enqueued(failure=f"thread/queue/add was sent to the Codex daemon for thread {target.address}, "
                            f"then: {exc}; the item may be queued (client id {client_id}): look, never re-send")
        err = answer.get("error")
        if isinstance(err, dict):
            if err.get("code") == METHOD_NOT_FOUND:
                return None
            return Enqueued(failure=f"thread/queue/add failed: {err.get('message', err)} (code {err.get('code')})")
        result = answer.get("result")
        sub = result.get("queuedSubmission") if isinstance(result, dict) else None
        if not isinstance(sub, dict):
            sub = {}
        item = sub.get("id")
        if not isinstance(item, str) or not THREAD_ID.fullmatch(item):
            return Enqueued(failure=f"thread/queue/add answered no item id: {str(answer)[:200]}")
        if sub.get("clientUserMessageId") not in (None, client_id):
            return Enqueued(failure=f"thread/queue/add answered item {item} with another client id "
                            f"({sub.get('clientUserMessageId')!r}, asked {client_id})")
        return Enqueued(item_id=item, client_id=client_id, via="thread/queue/add on the Codex daemon")

    def enqueued(self, target: Target, returncode: int, stdout: str, stderr: str) -> Enqueued:
        m = QUEUED.search(stdout)
        if returncode != 0 or not m:
            first = next((ln for ln in stderr.splitlines() if ln.startswith("Error:")),
                         stderr.strip().splitlines()[-1:] or ["?"])
            reason = first if isinstance(first, str) else first[0]
            return Enqueued(failure=f"codex queue exited {returncode}: {reason}")
        if m.group("thread").lower() != target.address.lower():
            return Enqueued(failure=f"codex queue answered for thread {m.group('thread')}, not {target.address}")
        return Enqueued(item_id=m.group("item"))

    def queue_file(self, target: Target) -> Path:
        return databases(target) / QUEUE_FILE

    def read_item(self, target: Target, item_id: str) -> dict[str, Any] | None:
        return read_item(databases(target), item_id)

    def item_reader(self, target: Target) -> QueueReader:
        return QueueReader(databases(target))

    def record_file(self, target: Target) -> Path | None:
        return rollout_path(codex_home(target), target.address, target.evidence_file)

    def scan(self, record: Path) -> RolloutScan:
        return RolloutScan(record)

    def find(self, record: Path, *, client_id: str | None, text: str) -> dict[str, Any] | None:
        return find_in_rollout(record, client_id=client_id, text=text)

    def turns_since(self, record: Path, since: float) -> list[dict[str, Any]]:
        return turns_since(record, since)

    def taker_gone(self, target: Target) -> str | None:
        """No live process holds the thread's writer lock (provider.py: the lock proves "loaded"):
        its TUI or daemon exited (or the daemon unloaded an idle detached thread; the lock does not
        tell which, so the reason names both), and the item waits until the thread is resumed. None when a holder
        is alive, or when /proc/locks cannot be read (then nothing is claimed either way)."""
        from relay_repl.system.proc import file_key, flocked_files, lock_holders, pid_alive, read_proc_locks

        lock = Path(CodexDetail.of(target).lock or codex_home(target) / "thread-writer-locks" / f"{target.address}.lock")
        resume = f"the item waits in the queue until the thread is resumed (`codex resume {target.address}`)"
        key = file_key(lock)
        if key is None:
            return f"thread {target.address} has no writer lock file ({lock}): no Codex process has it loaded; {resume}"
        name = lock.name  # once: the check below runs per descriptor of the host (a daemon has a hundred)
        if target.pid and key in (flocked_files(target.pid, name_ok=lambda link: link.endswith(name), want=key)
                                  or ()):
            return None  # the host discovery found holds it now (its own fdinfo): no need for the whole table
        table = read_proc_locks()
        if table is None:
            return None
        if any(pid_alive(p) for p in lock_holders(table, lock)):
            return None
        return (f"no process holds thread {target.address}'s writer lock ({lock.name}) now: the Codex process that "
                f"ran it has exited (or its daemon unloaded it); {resume}")

    def from_queue(self, hit: dict[str, Any]) -> bool:
        return bool(hit["turn_trigger"] == "queue")
