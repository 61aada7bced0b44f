"""Reading an exchange out of the ledger: a recipe or notebook run, or one relay id.

What counts as a message:
- each send the run made (its `run-step`/`notebook-send` events name the relay ids; one relay
  id alone names itself), drawn from the operator to the target the send was resolved to,
  with the hop its header carried and the state its delivery ended in (refused and withheld
  sends are drawn as refusals: nothing reached the receiver);
- each inbox message whose `re=` names one of those sends (any verdict: a `mismatch` answer is
  drawn, from the session the kernel pid was found to be, or from its claim, marked so);
- for one relay id that reached the inbox from a peer, that message.
Halts recorded while the exchange ran, and how a run ended, are marks.
"""

from __future__ import annotations

from relay_repl.core.envelope import header_of
from relay_repl.core.errors import DiscoveryError
from relay_repl.core.exchange import OPERATOR, Exchange, Mark, Message
from relay_repl.core.inbound import InboundMessage
from relay_repl.store.ledger import Event, Ledger

RUN_STARTS = ("run-start", "notebook-start")
_REFUSED = {"refused", "withheld"}


def _hop(payload: str | None) -> int | None:
    fields = header_of(payload)
    try:
        return int(fields["hop"]) if fields is not None else None
    except (KeyError, ValueError):
        return None


def _send(ledger: Ledger, relay_id: str, events: list[Event]) -> Message | None:
    """The newest delivery of `relay_id` (its `events`) as one arrow (None when it was never planned here)."""
    keys = [e.delivery for e in events if e.delivery]
    if not keys:
        return None
    devents = ledger.events(delivery=keys[-1])
    start = next((e for e in devents if e.kind == "delivery"), None)
    plan = next((e for e in devents if e.kind == "plan"), None)
    remote = next((e for e in devents if e.kind == "outcome" and e.data.get("host")), None)
    if plan is None and remote is not None:  # sent on a host: its plan was logged here under the relay id only
        plan = next((e for e in events if e.kind == "plan"), None)
    target = (start.data.get("spec") if start else None) or (remote.data.get("target") if remote else None) or (
        str(plan.data.get("action", "")).removeprefix("send to ").strip() if plan else "") or "?"
    body = str(start.data.get("body") or "") if start else str(remote.data.get("body") or "") if remote else ""
    payload = plan.data.get("payload") if plan else None
    if not body and isinstance(payload, str):
        body = payload.split("] ", 1)[-1]
    state, reason = "in flight", None
    answers = [e for e in (devents if remote is None else events) if e.kind == "answer"]
    if answers and not answers[-1].data.get("approved"):
        state = "withheld"
    for e in devents:
        if e.kind.startswith("stage:"):
            state = str(e.data.get("state") or state)
            if state in ("failed", "refused"):
                reason = str(e.data.get("detail") or "") or reason
    outcome = [e for e in devents if e.kind == "outcome"]
    if outcome:
        state = str(outcome[-1].data.get("state") or state)
        reason = outcome[-1].data.get("reason") or reason
    hop = ledger.sent_hop(relay_id)
    if hop is None and remote is not None and isinstance(remote.data.get("hop"), int):
        hop = remote.data["hop"]
    return Message(kind="refused" if state in _REFUSED else "send", sender=OPERATOR, receiver=target,
                   relay_id=relay_id, hop=hop if hop is not None else _hop(payload), state=state, text=body,
                   reason=reason, at=(start or devents[0]).at)


def _answer(m: InboundMessage) -> Message:
    v = m.verdict
    if v is not None and v.session:
        who = v.session
    else:
        who = f"{m.peer or 'unknown sender'} (claim)"
    return Message(kind="reply", sender=who, receiver=OPERATOR, relay_id=m.relay_id, hop=m.hop,
                   state=f"re {m.answers}" if m.answers else "unlinked",
                   verdict=v.shown if v is not None else (m.origin.get("verdict") or "no verdict"),
                   answers=m.answers, text=m.body, at=m.at)


def _run_ids(events: list[Event]) -> list[str]:
    ids: list[str] = []
    for e in events:
        if e.kind in ("run-step", "notebook-send"):
            rid = e.data.get("relay_id")
            if isinstance(rid, str) and rid not in ids:
                ids.append(rid)
    return ids


def read_exchange(ledger: Ledger, ref: str) -> Exchange:
    """The exchange of run `ref` (a recipe's or a notebook's run id), else of relay id `ref`."""
    ref = ref.strip()
    own = ledger.events(relay_id=ref)
    run = next((e for e in own if e.kind in RUN_STARTS), None)
    if run is not None:
        ids = _run_ids(own)
        name = run.data.get("recipe") or run.data.get("path") or "run"
        title = f"{'recipe' if run.kind == 'run-start' else 'notebook'} {name}, run {ref}"
    else:
        ids = [ref]
        title = f"relay id {ref}"
    logged = {rid: own if rid == ref else ledger.events(relay_id=rid) for rid in ids}  # each relay id's events, read once
    sends = [m for m in (_send(ledger, rid, logged[rid]) for rid in ids) if m is not None]
    inbox = ledger.inbox()
    answers = [_answer(m) for m in inbox if m.answers in ids]
    received = [_answer(m) for m in inbox if run is None and m.relay_id == ref]
    for rid in ids:  # an answer judged on a host (`remote-reply`): the host's inbox holds it, this ledger its copy
        for e in [r for r in logged[rid] if r.kind == "remote-reply"]:
            try:
                judged = InboundMessage.model_validate(e.data.get("message") or {})
            except ValueError:
                continue
            msg = _answer(judged)
            host = e.data.get("host")
            if host and "/" not in msg.sender and not msg.sender.endswith("(claim)"):  # judged there: its own name
                msg = msg.model_copy(update={"sender": f"{host}/{msg.sender}"})
            answers.append(msg.model_copy(update={"at": e.at}))
    if not sends and not answers and not received and run is None:
        raise DiscoveryError(f"no run or relay id {ref!r} in the ledger at {ledger.path}; `relay log` lists recent ones")
    messages = sorted([*sends, *answers, *received], key=lambda m: m.at)
    lifelines = [OPERATOR]
    for m in messages:
        for who in (m.sender, m.receiver):
            if who not in lifelines:
                lifelines.append(who)
    marks: list[Mark] = []
    if messages or run is not None:
        start = run.at if run is not None else messages[0].at
        end_events = [e for e in own if e.kind in ("run-end", "notebook-end")]
        end = end_events[-1].at if end_events else (messages[-1].at if messages else start)
        for e in ledger.events(kind="halt"):
            if start <= e.at <= end + 1.0:
                marks.append(Mark(kind="halt", at=e.at, text=f"relay-halt: {e.data.get('reason', '')} "
                                  f"(by {e.data.get('by', '?')})"))
        for e in end_events:
            state = e.data.get("state")
            if state not in ("done", None):
                marks.append(Mark(kind="run-end", at=e.at,
                                  text=f"run {state}" + (f": {e.data['reason']}" if e.data.get("reason") else "")))
    return Exchange(ref=ref, title=title, lifelines=lifelines, messages=messages, marks=marks)
