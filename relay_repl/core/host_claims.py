"""A host's word is a claim: what the operator's relay believes of a remote send, and why not.

Why pure values here: the operator's relay asks a host (over ssh, `relay serve --stdio`) to plan
and carry out a send, and that host may be wrong or lying. What it reports is believed only for a
plan this relay showed and the operator approved itself — that relay id, that target, those bytes
(the plan's digest) — and only as far as a delivery can go: never a state after a No, never one
going backwards. Each check is a function of what was asked, what was approved and what came back,
so it is tested over recorded frames without a host.

A host's strings are shown only through `visible` (`neutral` makes a whole frame inert at once,
before anything reads it), and a frame of the wrong shape is one line naming the host.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from relay_repl.core.approval import plan_digest
from relay_repl.core.controls import visible
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import EnvelopeError, HostError
from relay_repl.core.plan import Plan
from relay_repl.core.validation import first_error

NOTHING_HAPPENED = frozenset({DeliveryState.WITHHELD, DeliveryState.REFUSED})
"""The outcomes a host may report for a send the operator did not approve: nothing was done."""

PROGRESS = {
    DeliveryState.PLANNED: 0,
    DeliveryState.TYPED: 1,
    DeliveryState.SUBMITTED: 2, DeliveryState.QUEUED: 2,
    DeliveryState.DEQUEUED: 3, DeliveryState.HELD: 3,
    DeliveryState.IN_TURN: 4,
    DeliveryState.NO_REPLY: 5, DeliveryState.ACKNOWLEDGED: 5, DeliveryState.REPLIED: 5,
}
"""How far a delivery has got, for the states that say so; a state without a rank (failed, halted,
unknown, ...) ends or clouds a delivery and is never 'backwards'."""


class AskedSend(BaseModel):
    """What the operator's relay asked a host to send: the plan it comes back with must be this."""

    model_config = ConfigDict(frozen=True)

    host: str
    target: str  # as the host names it (`claude:alpha`), without the host
    body: str
    want: str = "none"
    hop: int = 0
    relay_id: str | None = None
    re: str | None = None  # the id the message answers (an agent's request whose answer it takes back)


class RemoteApproval(BaseModel):
    """The operator's own yes to one remote plan, as this relay recorded it before answering the host."""

    model_config = ConfigDict(frozen=True)

    host: str
    relay_id: str
    target: str
    digest: str
    payload: str
    transport: str


def neutral(value: Any) -> Any:
    """`value` (a decoded frame from a host) with every string, key or value, passed through `visible`:
    nothing a host wrote can act on a terminal, whatever command shows it later. A `plan` is the one
    part kept as the host sent it: it is checked against its digest (and against the send that was
    asked) byte for byte, and only ever shown through Plan.render, which passes each part through
    `visible`. Neutralising it here changed the payload of any message holding a line feed, a
    bidi mark (U+200F, common in Hebrew and Arabic text) or U+2028, so its digest no longer matched
    and an honest host's plan was declined as a lie."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, list):
        return [neutral(v) for v in value]
    if isinstance(value, dict):
        return {visible(str(k)): v if k == "plan" else neutral(v) for k, v in value.items()}
    return value


def one_line_shape(exc: ValidationError) -> str:
    """A pydantic error as a few words (core/validation.py's first error), never its dump or URL."""
    first = first_error(exc)
    return visible(f"{first.loc or 'the value'}: {first.msg}{first.more}")[:200]


def shaped(host: str, op: str, model: type[BaseModel], data: Any) -> Any:
    """`data` from host's answer to `op` validated as `model`, or one line naming the host."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise HostError(f"host {host} answered {op} with a value of the wrong shape ({one_line_shape(exc)}): "
                        f"not read; check {host} (is its relay the same release as this one?)") from None
    except RecursionError:
        raise HostError(f"host {host} answered {op} with a value nested too deeply: not read; check {host}") from None


def envelope_of(payload: str) -> Envelope | None:
    """The one relay envelope line a plan's payload carries (a transport may wrap it), else None."""
    found = []
    for line in payload.split("\n"):
        i = line.find("[relay/")
        if i < 0:
            continue
        try:
            env = Envelope.parse(line[i:])
        except EnvelopeError:
            return None
        if env is not None:
            found.append(env)
    return found[0] if len(found) == 1 else None


def is_send_plan(plan: Plan) -> bool:
    """A plan that sends a message (it names a relay id, or says it sends). Any other plan a host asks
    about (listing the operator's inbox there as a Claude peer) is a step before the send: shown and
    asked like any plan, and its yes is never an approval of a send."""
    return plan.relay_id is not None or plan.action.startswith("send") or "[relay/" in plan.payload


def plan_problem(asked: AskedSend, plan: Plan, digest: str) -> str | None:
    """Why the plan a host asks about is not the send that was asked of it, or None.

    The operator approves what is shown; a plan for another target, other bytes, another id, or
    whose digest is not its own is declined before it is shown, so no yes can be given to it."""
    if plan_digest(plan) != digest:
        return "a plan that does not match its own digest"
    if plan.action != f"send to {asked.target}":
        return f"a plan to {plan.action.removeprefix('send to ')!r}, asked for {asked.target}"
    env = envelope_of(plan.payload)
    if env is None:
        return "a plan whose payload carries no single relay envelope"
    if env.body != asked.body:
        return "a plan whose payload carries another body than the one asked"
    if (env.want, env.hop) != (asked.want, asked.hop):
        return f"a plan with want={env.want} hop={env.hop}, asked want={asked.want} hop={asked.hop}"
    if env.re != asked.re:
        return f"a plan answering {env.re or 'nothing'} (re=), asked {asked.re or 'no re='}"
    if asked.relay_id is not None and env.id != asked.relay_id:
        return f"a plan under relay id {env.id}, asked {asked.relay_id}"
    if plan.relay_id != env.id:
        return f"a plan naming relay id {plan.relay_id} for an envelope with id {env.id}"
    return None


def outcome_claim(d: Delivery, approved: RemoteApproval | None, asked: AskedSend) -> str | None:
    """What in a host's reported delivery the operator did not approve, in words, or None.

    Believed only: nothing happened (withheld, refused) when nothing was approved; else that very
    relay id, target and plan digest, with its stages never going backwards."""
    said = f"{d.outcome} ({d.state.value}) via {d.transport} to {d.target}"
    if approved is None:
        if d.state in NOTHING_HAPPENED and not d.evidence:
            return None
        return f"a send ({said}) for relay id {d.relay_id}"
    if d.relay_id != approved.relay_id:
        return f"an outcome for relay id {d.relay_id} (approved: {approved.relay_id})"
    if d.target != approved.target:
        return f"a send to {d.target} (approved: {approved.target})"
    if d.plan is None or plan_digest(d.plan) != approved.digest:
        return f"a send of another plan ({said}; other payload, target or transport than the one approved)"
    if d.transport != approved.transport:
        return f"a send via {d.transport} (approved: {approved.transport})"
    back = backwards(d)
    if back:
        return f"a delivery whose state went backwards ({back})"
    return None


def backwards(d: Delivery) -> str | None:
    """The first step at which the delivery's ranked states go backwards, in words, or None."""
    steps = [(e.stage, e.state) for e in d.evidence] + [("outcome", d.state)]
    best: tuple[str, DeliveryState] | None = None
    for stage, state in steps:
        rank = PROGRESS.get(state)
        if rank is None:
            continue
        if best is not None and rank < PROGRESS[best[1]]:
            return f"{best[1].value} at {best[0]}, then {state.value} at {stage}"
        best = (stage, state)
    return None
