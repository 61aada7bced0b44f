"""Approvals for the checks and tests that drive a transport directly: minted the only way there is,
by the gate (`session.gate.ask`) answering yes on a plan for exactly that act."""

from __future__ import annotations

from typing import Any

from relay_repl.core.approval import Approval, spend
from relay_repl.core.plan import Plan
from relay_repl.core.target import Target
from relay_repl.session.core.gate import ScriptedGate, ask
from relay_repl.session.core.gating import Gatekeeper


def plan_for(transport: str, target: Target, payload: str, files: tuple[str, ...] = (),
             relay_id: str | None = None) -> Plan:
    return Plan(action=f"send to {target.spec}", target=target.describe(), identified_by=target.identified_by,
                transport=transport, payload=payload, delivered_when="the test's receiver shows it", files=files,
                relay_id=relay_id)


async def approval_for(transport: str, target: Target, payload: str, files: tuple[str, ...] = (),
                       relay_id: str | None = None) -> Approval:
    """The gate's approval (a scripted yes) for sending `payload` to `target` by `transport`."""
    plan = plan_for(transport, target, payload, files, relay_id)
    approval = await ask(ScriptedGate([True]), plan, Gatekeeper.scope(plan, target))
    assert approval is not None
    return approval


async def approved_send(transport: Any, d: Any, target: Target, payload: str, log: Any, **kw: Any) -> None:
    """`transport.send(...)` under a fresh approval for exactly this act, spent afterwards."""
    approval = await approval_for(transport.name, target, payload, tuple(transport.plan_files(target)), d.relay_id)
    try:
        await transport.send(d, target, payload, log, approval=approval, **kw)
    finally:
        spend(approval)


async def file_approval(*paths: Any) -> Approval:
    """The gate's approval (a scripted yes) for a plan that creates or removes exactly `paths`."""
    plan = Plan(action="create files", target="test", identified_by="test", transport="files",
                payload=" ".join(map(str, paths)), delivered_when="-", files=tuple(f"creates {p}" for p in paths))
    approval = await ask(ScriptedGate([True]), plan, Gatekeeper.scope(plan, None))
    assert approval is not None
    return approval
