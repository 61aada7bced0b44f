"""Who sent a message to the operator's inbox: a verdict from the kernel's peer pid.

The inbox knows one authenticated fact per connection: the peer pid (and its
start time) from SO_PEERCRED. This module turns it into a verdict (see
core.inbound.Verdict) without ever trusting the claim:

1. Walk from the connecting process up its parents (a `relay reply` is run by a
   shell the agent's tool started) and ask each agent module, nearest first,
   whether that process is one of its sessions (`identify_process`): a Claude
   session is a live registry record whose pid holds its listening socket; a
   Codex host holds thread locks or is the daemon. What counts is the agent's
   rule, so this file never branches on an agent kind.
2. Compare the claim (the envelope's `from=`, else a wrapper's `from-name`, else
   the frame's `from`) with what that session may claim: `verified` if it
   matches (or there is no claim), `mismatch` if not.
3. No session in the chain: `mismatch` when the claim names a live session (a
   process posing as it), else `unknown process`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from relay_repl.core.inbound import PeerIdentity, Verdict, claim_address
from relay_repl.system.proc import ancestors, proc_start


class Identifies(Protocol):
    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None: ...

    def claimed_session(self, address: str) -> str | None: ...


class OriginJudge:
    """Judges inbound connections against the agents' registries (read-only)."""

    def __init__(self, agents: Sequence[Identifies]) -> None:
        self.agents = list(agents)

    @classmethod
    def default(cls, env: Mapping[str, str] | None = None) -> OriginJudge:
        from relay_repl.agents import default_providers

        return cls(default_providers(env))

    def identify(self, pid: int) -> tuple[PeerIdentity | None, tuple[int, ...]]:
        """The nearest session at or above `pid`, and the pids walked to reach it."""
        chain = ancestors(pid)
        for i, p in enumerate(chain):
            for agent in self.agents:
                found = agent.identify_process(p, tuple(chain[:i]))
                if found is not None:
                    return found, tuple(chain[: i + 1])
        return None, tuple(chain)

    def named(self, address: str) -> str | None:
        for agent in self.agents:
            spec = agent.claimed_session(address)
            if spec:
                return spec
        return None

    def judge(self, origin: Mapping[str, Any], claim: str | None) -> Verdict:
        pid = origin.get("verifiedPeerPid")
        start = origin.get("verifiedPeerProcStart")
        if not isinstance(pid, int) or pid <= 0:
            return Verdict(verdict="unknown process", claim=claim, detail="the kernel gave no peer pid")
        if start is not None and proc_start(pid) != str(start):
            return Verdict(verdict="unknown process", pid=pid, proc_start=start, claim=claim,
                           detail=f"pid {pid} exited (or was reused) before it could be identified")
        ident, chain = self.identify(pid)
        addr = claim_address(claim)
        base = dict(pid=pid, proc_start=None if start is None else str(start), claim=claim, chain=chain)
        if ident is not None:
            if addr is None or addr in ident.claimable:
                spec = ident.specs.get(addr or "", ident.spec)
                return Verdict(verdict="verified", session=spec, session_pid=ident.pid, detail=ident.evidence, **base)
            return Verdict(verdict="mismatch", session=ident.spec, session_pid=ident.pid,
                           detail=f"claims {addr!r}, which {ident.spec} may not claim ({ident.evidence})", **base)
        named = self.named(addr) if addr else None
        if named:
            return Verdict(verdict="mismatch", detail=f"claims to be {named}, but pid {pid} is not that session "
                           "and no session started it", **base)
        return Verdict(verdict="unknown process",
                       detail=f"pid {pid} is no discovered session and was not started by one", **base)
