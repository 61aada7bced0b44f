"""Approval as a capability: the gate's yes, bound to the plan it showed.

Why a value and not a bool: a bool says "somebody said yes to something". Every
side-effecting primitive (a queue insert, a socket write, literal text, a key, a
registry record, a socket file in another program's directory, unlinking another
process's file) takes an `Approval` and refuses unless it is

- live: minted by the gate in this process and not yet spent. The mint is handed
  out ONCE per process (`minter()`), and `session/core/gate.py` takes it at import; a
  value built by hand, copied (`model_copy`) or unpickled is not the object the
  mint recorded, so it is refused however right its fields look;
- for this act: its `Scope` (target identity with pid AND process start time,
  transport, exact payload bytes, files created/replaced, and the digest of the
  whole plan as shown) matches what the primitive is about to touch.

Lifetime: one approval covers one plan, i.e. one delivery (all the keys, writes
and files that plan names) or one debugger step; the session spends it when that
delivery or step ends, whatever the outcome, so it can never be used again.

What this does not claim: Python has no private memory. Code that digs into
private names (`_x`, closures, `gc`) or runs its own subprocess can do anything the
operator's process can; the guarantee is that nothing reachable through the public
objects (`session` and what hangs off it) acts without the gate.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.readable import Readable

from relay_repl.core.errors import NoApproval
from relay_repl.core.plan import Plan

NO_APPROVAL = ("no approval for this plan: side effects go through session.send(...) (or the debugger's step), "
               "which shows the plan and asks y/N")


class Scope(BaseModel):
    """Exactly what one approval covers; its digest is what the gate binds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    plan: str = Field(description="sha256 of the plan as shown (every field, payload included)")
    action: str
    relay_id: str | None = Field(default=None, description="the delivery the plan is for")
    target: str = Field(description="the target's spec, or what the plan names for a registry write")
    pid: int | None = None
    proc_start: str | None = Field(default=None, description="the target process's start time (pid reuse guard)")
    address: str | None = None
    pane: str | None = None
    transport: str
    payload: str = Field(description="the exact bytes typed, written or queued")
    files: tuple[str, ...] = ()

    @classmethod
    def of(cls, plan: Plan, *, target: str | None = None, pid: int | None = None, proc_start: str | None = None,
           address: str | None = None, pane: str | None = None) -> Scope:
        return cls(plan=plan_digest(plan), action=plan.action, relay_id=plan.relay_id, target=target or plan.target, pid=pid,
                   proc_start=proc_start, address=address, pane=pane, transport=plan.transport,
                   payload=plan.payload, files=tuple(plan.files))

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def plan_digest(plan: Plan) -> str:
    """The digest of a plan as shown: any change to any field gives another digest."""
    return hashlib.sha256(json.dumps(plan.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


class Approval(Readable, BaseModel):
    """The gate's yes for one scope. Only the mint's own objects are live."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: Scope
    digest: str
    nonce: str

    def __repr__(self) -> str:
        live = "live" if _LIVE.get(self.nonce) is self else "not live"
        return f"<Approval {self.digest[:12]} for {self.scope.action} via {self.scope.transport} ({live})>"


_LIVE: dict[str, Approval] = {}
_MINT_TAKEN = False


def minter() -> Callable[[Scope], Approval]:
    """The mint, handed out once per process (the gate takes it at import); a second call
    is refused, so no other code can mint."""
    global _MINT_TAKEN
    if _MINT_TAKEN:
        raise NoApproval("the approval mint belongs to the gate (session/core/gate.py): only the gate mints approvals")
    _MINT_TAKEN = True

    def mint(scope: Scope) -> Approval:
        a = Approval(scope=scope, digest=scope.digest, nonce=secrets.token_hex(16))
        _LIVE[a.nonce] = a
        return a

    return mint


def is_live(approval: object) -> bool:
    return isinstance(approval, Approval) and _LIVE.get(approval.nonce) is approval \
        and approval.digest == approval.scope.digest


def spend(approval: Approval | None) -> None:
    """End an approval (its delivery or step is over): it can never act again."""
    if approval is not None and _LIVE.get(approval.nonce) is approval:
        del _LIVE[approval.nonce]


def check(approval: object, *, what: str, transport: str | None = None, payload: str | None = None,
          target: str | None = None, pid: int | None = None, address: str | None = None, pane: str | None = None,
          file: str | None = None, relay_id: str | None = None) -> Scope:
    """The scope of a live approval that covers this act, or NoApproval (one line).

    Each given fact must equal the approved one: the transport, the exact payload,
    the target's spec, pid and address, the pane, the delivery's relay id, and a file
    the plan named."""
    if not is_live(approval):
        raise NoApproval(f"{what} refused: {NO_APPROVAL}")
    assert isinstance(approval, Approval)
    s = approval.scope
    wrong = [name for name, mine, got in (("transport", s.transport, transport), ("payload", s.payload, payload),
                                          ("target", s.target, target), ("pid", s.pid, pid),
                                          ("address", s.address, address), ("pane", s.pane, pane),
                                          ("relay id", s.relay_id, relay_id))
             if got is not None and mine != got]
    if file is not None and not any(_names(f, file) for f in s.files):
        wrong.append(f"file {file}")
    if wrong:
        raise NoApproval(f"{what} refused: the approval is for another plan ({', '.join(wrong)} differ); "
                         f"{NO_APPROVAL}")
    return s


def _names(entry: str, file: str) -> bool:
    """Whether a plan's file entry (`creates PATH`, `removes PATH (why)`, `replaces PATH: why`, or a
    bare PATH of the operator's own `confirm`) names exactly `file`. A substring was enough before,
    so an approval naming /x/sock.bak covered creating /x/sock."""
    if entry == file:
        return True
    _verb, _, rest = entry.partition(" ")
    return rest == file or rest.startswith((file + ": ", file + " ("))
