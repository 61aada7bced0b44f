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
2. Where that process hosts several sessions (a shared Codex daemon runs every
   thread), its pid proves the host only. The thread is proven only by its own
   record holding the call (`prove_thread`: the rollout's `relay reply <id>`
   command or `relay_reply` tool call); else the verdict is `host verified`
   and says which sessions the host runs. An environment variable naming the
   thread is a claim, never proof.
3. Compare the claim (the envelope's `from=`, else a wrapper's `from-name`, else
   the frame's `from`) with what that session may claim: `verified` if it
   matches (or there is no claim), `mismatch` if not.
4. No session in the chain: `mismatch` when the claim names a live session (a
   process posing as it), else `unknown process`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from relay_repl.core.inbound import PeerIdentity, ToolCall, Verdict, claim_address
from relay_repl.core.origin_words import no_session
from relay_repl.system.proc import proc_start, read_stat


class Identifies(Protocol):
    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None: ...

    def claimed_session(self, address: str) -> str | None: ...


class ProvesThread(Protocol):
    def prove_thread(self, ident: PeerIdentity, call: ToolCall) -> tuple[str | None, str]: ...


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
        _agent, ident, chain = self._identify(pid)
        return ident, chain

    def _identify(self, pid: int) -> tuple[Identifies | None, PeerIdentity | None, tuple[int, ...]]:
        chain: list[int] = []
        for p in _up_from(pid):  # parents read one at a time: none above the session that is found
            for agent in self.agents:
                found = agent.identify_process(p, tuple(chain))
                if found is not None:
                    return agent, found, (*chain, p)
            chain.append(p)
        return None, None, tuple(chain)

    def session_of(self, pid: int, call: ToolCall) -> tuple[str | None, str]:
        """The one session process `pid` acts for, proven as strongly as the evidence allows,
        or None and why not (no session ran it; a host of several, and no record names one)."""
        agent, ident, _chain = self._identify(pid)
        if ident is None:
            return None, no_session(pid)
        ident, why = narrow(agent, ident, call)
        return (None, why) if ident.host_only else (ident.spec, ident.evidence)

    def named(self, address: str) -> str | None:
        for agent in self.agents:
            spec = agent.claimed_session(address)
            if spec:
                return spec
        return None

    def judge(self, origin: Mapping[str, Any], claim: str | None, call: ToolCall | None = None) -> Verdict:
        """The verdict on one connection; `call` is what the sender's own record should hold
        (the answer it sent), which can name one session of a host that runs several."""
        pid = origin.get("verifiedPeerPid")
        start = origin.get("verifiedPeerProcStart")
        if not isinstance(pid, int) or pid <= 0:
            return Verdict(verdict="unknown process", claim=claim, detail="the kernel gave no peer pid")
        if start is not None and proc_start(pid) != str(start):
            return Verdict(verdict="unknown process", pid=pid, proc_start=start, claim=claim,
                           detail=f"pid {pid} exited (or was reused) before it could be identified")
        agent, ident, chain = self._identify(pid)
        addr = claim_address(claim)
        base = dict(pid=pid, proc_start=None if start is None else str(start), claim=claim, chain=chain)
        if ident is not None and ident.host_only:
            ident, why = narrow(agent, ident, call)
            if ident.host_only:
                if addr is not None and addr not in ident.claimable:
                    return Verdict(verdict="mismatch", session=ident.spec, session_pid=ident.pid,
                                   detail=f"claims {addr!r}, which {ident.spec} does not host ({ident.evidence})", **base)
                return Verdict(verdict="host verified", session_pid=ident.pid, detail=why, **base)
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
                       detail=no_session(pid), **base)


def _up_from(pid: int, limit: int = 64) -> Iterator[int]:
    """`pid` and its ancestors, nearest first (as system.proc.ancestors lists them), each parent
    read only when the one below it was no session."""
    seen: set[int] = set()
    cur: int | None = pid
    while cur is not None and cur > 1 and len(seen) < limit and cur not in seen:
        seen.add(cur)
        yield cur
        st = read_stat(cur)
        cur = st.ppid if st else None


def hosted(ident: PeerIdentity) -> str:
    """`beta, gamma, delta`: the sessions a host runs, by the names operators use."""
    names = sorted({spec.partition(":")[2] or spec for spec in ident.specs.values()})
    return ", ".join(names) or "no session"


def narrow(agent: Identifies | None, ident: PeerIdentity, call: ToolCall | None) -> tuple[PeerIdentity, str]:
    """`ident` narrowed to the one session whose own record holds `call`, when it is a host
    of several; else unchanged, with the one line saying what the pid does and does not prove."""
    if not ident.host_only:
        return ident, ident.evidence
    not_provable = f"host verified: pid {ident.pid} hosts {hosted(ident)}; thread not provable"
    prove = getattr(agent, "prove_thread", None)
    if call is None or prove is None:
        return ident, f"{not_provable} ({ident.evidence})"
    spec, why = prove(ident, call)
    if spec is None:
        return ident, f"{not_provable}: {why} ({ident.evidence})"
    keys = frozenset(k for k, v in ident.specs.items() if v == spec)
    return ident.model_copy(update={"spec": spec, "claimable": keys, "host_only": False,
                                    "specs": {k: spec for k in keys},
                                    "evidence": f"{ident.evidence}; {why}"}), why
