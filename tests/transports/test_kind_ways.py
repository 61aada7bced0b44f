"""The socket and queue transports are generic (issue 19): each is named by its entry point, its
capability flags are the ones the offering kind's adapter declares, and every fact it needs is asked
of the target's kind (`socket_wire()`, `durable_queue()`).

The proof: a toy kind registered at run time, whose durable queue is a shell command and two files,
is served by `DurableQueueTransport` (plan, gate, enqueue, read-back, confirm) with no transport code
naming it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from relay_repl.agents import registry
from relay_repl.agents.adapter import AdapterSpec
from relay_repl.agents.durable_queue import Enqueued, EnqueueCommand
from relay_repl.agents.capabilities import EvidenceBase, KindFacts, TransportsBase, capability
from relay_repl.agents.kind import AgentKindBase
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import RelayError
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger
from relay_repl.system.entry_points import EntryPoint
from relay_repl.transports.base import Capabilities, StageLog
from relay_repl.transports.durable_queue import DurableQueueTransport
from relay_repl.transports.offered import offered
from relay_repl.transports.registry import TransportContext, build_transports
from relay_repl.transports.socket_message import SocketTransport
from tests.support.approvals import approved_send

pytestmark = pytest.mark.anyio
ITEM = "0000aaaa-0000-4000-8000-000000000001"
PAYLOAD = "[relay/1 from=user:op@host.1 to=toy:one id=op-7 hop=0 want=none] queued for the toy"


class ToyQueue:
    """A durable queue of one directory: `queue.json` (pending items) and `record.jsonl` (turns)."""

    relies_on = "the toy queue's files were"
    command_name = "toy enqueue"

    def refusal(self, target: Target) -> str | None:
        return None if target.address.startswith("toy-") else f"{target.spec} has no toy thread"

    def notes(self, target: Target) -> tuple[str, ...]:
        return ("the toy takes one item per turn",)

    def delivered_when(self, target: Target) -> str:
        return "record.jsonl shows a queue turn with our text"

    def command(self, target: Target, payload: str, binary: str | None, env: Mapping[str, str]) -> EnqueueCommand:
        script = ('printf \'{"%s": {"text": "%s", "state": "pending", "ahead": 0, "failure": null, '
                  '"client_id": "c-1"}}\' "$1" "$2" > "$3/queue.json"; echo "toy queued $1"')
        return EnqueueCommand(argv=("/bin/sh", "-c", script, "sh", ITEM, "payload-x", target.address[4:]),
                              env=dict(env))

    async def enqueue(self, target: Target, payload: str) -> Enqueued | None:
        return None  # no host to ask: the command runs

    def enqueued(self, target: Target, returncode: int, stdout: str, stderr: str) -> Enqueued:
        m = re.search(r"toy queued (\S+)", stdout)
        return Enqueued(item_id=m.group(1)) if returncode == 0 and m else Enqueued(failure=f"toy exited {returncode}")

    def queue_file(self, target: Target) -> Path:
        return Path(target.address[4:]) / "queue.json"

    def read_item(self, target: Target, item_id: str) -> dict[str, Any] | None:
        f = self.queue_file(target)
        return json.loads(f.read_text()).get(item_id) if f.exists() else None

    def record_file(self, target: Target) -> Path | None:
        return Path(target.address[4:]) / "record.jsonl"

    def scan(self, record: Path) -> Any:
        queue = self

        class Scan:
            def find(self, *, client_id: str | None, text: str) -> dict[str, Any] | None:
                return queue.find(record, client_id=client_id, text=text)

        return Scan()

    def find(self, record: Path, *, client_id: str | None, text: str) -> dict[str, Any] | None:
        if not record.exists():
            return None
        for line in record.read_text().splitlines():
            turn = json.loads(line)
            if turn["client_id"] == client_id:
                return turn
        return None

    def turns_since(self, record: Path, since: float) -> list[dict[str, Any]]:
        return [json.loads(x) for x in record.read_text().splitlines()] if record.exists() else []

    def from_queue(self, hit: dict[str, Any]) -> bool:
        return bool(hit["turn_trigger"] == "queue")


class ToyEvidence(EvidenceBase):
    evidence_name = "toy record"


class ToyTransports(TransportsBase):
    def durable_queue(self) -> ToyQueue:
        return ToyQueue()


class ToyKind(AgentKindBase):
    facts = KindFacts(kind="toy-agent", prefix="toy", label="Toy", binary="toy", npm_package="toy",
                      adapter_spec=AdapterSpec.model_validate({
                          "kind": "toy-agent", "prefix": "toy", "verified_versions": ["1.0"], "facts": "tests only",
                          "registry": {"env": "TOY_HOME", "default": "~/.toy"},
                          "transports": [{"name": "toy-queue", "durable": True, "when": "always"}],
                          "screen": {"ui_mode_chars": "/", "classifier": "none"},
                      }))
    evidence = capability(ToyEvidence)
    transports = capability(ToyTransports)


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = dict(registry._entry_points())
    toy = EntryPoint(name="toy-agent", value=f"{__name__}:ToyKind", group=registry.GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: {**real, "toy-agent": toy})
    registry._load.cache_clear()
    yield
    registry._load.cache_clear()


def _target(tmp_path: Path, kind: str = "toy-agent") -> Target:
    return Target(kind=kind, prefix="toy", name="one", address=f"toy-{tmp_path}", pid=None, live=True, state="idle",
                  transports=("toy-queue",), identified_by="test")


async def test_a_kinds_durable_queue_is_served_without_transport_code_naming_it(tmp_path, toy_registered):
    t = DurableQueueTransport("toy-queue")
    assert t.capabilities == Capabilities(durable=True)  # the toy adapter's flags, not the transport's
    target = _target(tmp_path)
    assert t.refusal(target) is None
    plan = t.plan(target, Envelope.parse(PAYLOAD))
    assert plan.transport == "toy-queue" and "the toy takes one item per turn" in plan.notes
    assert plan.delivered_when == "record.jsonl shows a queue turn with our text"

    d = Delivery(target=target.spec, transport=t.name)
    log = StageLog(d, Ledger(tmp_path / "ledger.sqlite"))
    await approved_send(t, d, target, PAYLOAD, log)
    assert d.state is DeliveryState.QUEUED and d.extra.item_id == ITEM and d.extra.client_id == "c-1"

    await t.confirm(d, target, PAYLOAD, log, timeout=0.2)  # still pending: never claimed
    assert d.state is DeliveryState.QUEUED and "still pending in the queue" in (d.reason or "")
    look = await t.look(d, target, PAYLOAD)  # not landed, but the queue will hand it over: never re-send it
    assert look.landed is False and look.waiting is True and "waiting in a durable queue" in look.render()

    (tmp_path / "queue.json").write_text("{}")  # the toy takes the item into a queue turn
    (tmp_path / "record.jsonl").write_text(json.dumps({"turn_id": "t1", "turn_trigger": "queue", "client_id": "c-1"}) + "\n")
    d.reason = None
    await t.confirm(d, target, PAYLOAD, log, timeout=5)
    assert [e.state for e in d.evidence[-2:]] == [DeliveryState.DEQUEUED, DeliveryState.IN_TURN]
    assert d.evidence[-1].detail == "toy record turn t1 (trigger queue) carries our message"
    assert d.evidence[-1].data["toy record"] == str(tmp_path / "record.jsonl")
    look = await t.look(d, target, PAYLOAD)
    assert look.landed is True and not look.waiting and look.data["queue file"] == str(tmp_path / "queue.json")


async def test_the_kind_refuses_its_own_targets_and_one_without_a_queue_is_refused(tmp_path, toy_registered):
    t = DurableQueueTransport("toy-queue")
    bad = _target(tmp_path).model_copy(update={"address": "elsewhere"})
    assert t.refusal(bad) == "toy:one has no toy thread"
    stranger = Target(kind="fake-none", prefix="x", name="one", address="toy-x", live=True, state="idle",
                      transports=("toy-queue",), identified_by="test")
    assert t.refusal(stranger) == "x:one's agent has no durable queue"


def test_a_transport_no_kind_offers_is_one_line():
    with pytest.raises(RelayError, match="no registered agent kind offers the transport 'toy-queue'"):
        offered("toy-queue", lambda k: k.transports.durable_queue())
    with pytest.raises(RelayError, match="'toy-queue'"):
        SocketTransport("toy-queue")  # a name whose kind has no socket wire either


def test_every_installed_transport_can_do_what_the_adapters_declare():
    """One home for the flags: each transport a kind offers does exactly what its adapter says."""
    built = {t.name: t for t in build_transports(TransportContext())}
    for k in registry.kinds():
        for spec in k.transports.specs():
            flags = {f: getattr(spec, f) for f in Capabilities.model_fields}
            assert built[spec.name].capabilities == Capabilities(**flags), (k.facts.kind, spec.name)


def test_ranking_a_kinds_own_transport_loads_no_other_kind():
    """issue 40: ranking codex-queue for a Codex target asks the kind its name starts with first, so
    a cold `relay send codex:...` imports no Claude package before its plan (the old code asked the
    kinds in name order: claude-code first, its package and adapter loaded to learn it offers none)."""
    probe = ("import sys\n"
             "from relay_repl.transports.durable_queue import DurableQueueTransport\n"
             "from relay_repl.transports.offered import asked_first\n"
             "t = DurableQueueTransport('codex-queue', defer=True)\n"
             "assert t.capabilities.durable and t._kind.facts.kind == 'codex'\n"
             "print(sorted({m.split('.')[2] for m in sys.modules if m.startswith('relay_repl.agents.') and m.count('.') > 2}))\n"
             "print(asked_first('claude-code-socket'), asked_first('tmux'))\n")
    cp = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr[-2000:]
    loaded, order = cp.stdout.splitlines()
    assert loaded == "['codex']"
    assert order == "['claude-code', 'codex', 'gemini-cli'] ['claude-code', 'codex', 'gemini-cli']"


async def test_the_read_back_and_the_turn_seen_in_one_poll_are_one_commit_echoed_after_it(tmp_path, toy_registered):
    """Issue 33: a Codex read-back that finds the item gone and the turn carrying it in one poll recorded
    two stages, two commits; now one (mutant/old code fails it: two COMMITs), both stages still recorded,
    and their lines are echoed once the commit is made, not before."""
    t = DurableQueueTransport("toy-queue")
    target = _target(tmp_path)
    led = Ledger(tmp_path / "ledger.sqlite")
    said: list[tuple[str, int]] = []
    d = Delivery(target=target.spec, transport=t.name)
    log = StageLog(d, led, echo=lambda line: said.append((line, len(led.events(delivery=d.key)))))
    await approved_send(t, d, target, PAYLOAD, log)
    (tmp_path / "queue.json").write_text("{}")
    (tmp_path / "record.jsonl").write_text(json.dumps({"turn_id": "t1", "turn_trigger": "queue", "client_id": "c-1"}) + "\n")
    stmts: list[str] = []
    led._con.set_trace_callback(stmts.append)
    await t.confirm(d, target, PAYLOAD, log, timeout=5)
    led._con.set_trace_callback(None)
    assert [e.state for e in d.evidence[-2:]] == [DeliveryState.DEQUEUED, DeliveryState.IN_TURN]
    assert [e.kind for e in led.events(delivery=d.key)][-2:] == ["stage:readback", "stage:turn"]
    assert sum(1 for s in stmts if s.strip() == "COMMIT") == 1
    echoed = [(line, n) for line, n in said if "[readback]" in line or "[turn]" in line]
    assert len(echoed) == 2 and all(n == len(led.events(delivery=d.key)) for _, n in echoed)  # said after the commit


async def test_stages_recorded_together_leave_nothing_when_one_fails(tmp_path):
    """`StageLog.together`: both or neither; an armed log (a halt may stop it) keeps a commit per stage."""
    led = Ledger(tmp_path / "ledger.sqlite")
    d = Delivery(target="toy:one", transport="toy-queue")
    said: list[str] = []
    log = StageLog(d, led, echo=said.append)
    with pytest.raises(RuntimeError):
        with log.together():
            log("readback", DeliveryState.DEQUEUED, "gone")
            raise RuntimeError("disk")
    assert led.events(delivery=d.key) == [] and said == []
    log.armed = True
    with log.together():
        log("enqueue", DeliveryState.QUEUED, "queued")
        assert len(led.events(delivery=d.key)) == 1  # committed at once, as before
