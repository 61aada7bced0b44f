"""What the equivalence tests of `relay send`'s plain pre-plan compare (frontends/send_plain.py, issue 40):
the plan phase 1 prints and the plan the models build for the same send, as `relay send` builds it.

`plain_plan(spec, body)` runs phase 1 in this process (its printed text captured); `models_plan(spec,
body, relay_id)` runs the real pipeline (`make_session`, the inbox opened as `cmd_send` opens it,
`session.send` with the id pinned) up to its gate, which records the plan and answers No. Both in one
process, so the sender address and the pid in the plan are the same. Any kind's tests use these.
"""

from __future__ import annotations

import io
import os
import re
from typing import Any

import anyio

from relay_repl.frontends import send_plain


def plain_plan(spec: str, body: str) -> tuple[send_plain.Preplan, str]:
    """(what phase 1 left, what it printed) for `relay send spec body`."""
    prefix, _, name = spec.partition(":")
    out = io.StringIO()
    pre = send_plain.preplan(prefix, name, body, dict(os.environ), out)
    return pre, out.getvalue()


def models_plan(spec: str, body: str, relay_id: str | None) -> Any:
    """The `Plan` the models ask about for `relay send spec body` with `relay_id` pinned (the gate says No)."""
    from relay_repl.frontends.commands.common import inbox_open
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate

    gate = ScriptedGate([False])

    async def go() -> None:
        session = make_session(approve=gate, echo=None)
        async with inbox_open(session, lambda line: None):
            await session.send(spec, body, relay_id=relay_id)

    anyio.run(go)
    assert len(gate.shown) == 1, gate.shown
    return gate.shown[0]


def same_plan(spec: str, body: str) -> dict[str, Any]:
    """Phase 1's plan of `spec`/`body`, asserted equal (fields, digest, printed bytes) to the models'; its fields."""
    from relay_repl.core.approval import plan_digest

    pre, printed = plain_plan(spec, body)
    assert pre.fields is not None, "the plain path handed this send to the models"
    plan = models_plan(spec, body, pre.relay_id)
    assert pre.fields == plan.model_dump(mode="json")
    assert pre.digest == plan_digest(plan)
    assert printed == plan.render() + "\n"
    return pre.fields


def normalised(text: str) -> str:
    """A process's output with what differs by process (its pid, in its address and listener) masked."""
    text = re.sub(r"(operator\.[^\s.]+\.)\d+", r"\1PID", text)
    text = re.sub(r"/\d+\.sock\b", "/PID.sock", text)
    return re.sub(r"verifiedPeerPid \d+", "verifiedPeerPid PID", text)
