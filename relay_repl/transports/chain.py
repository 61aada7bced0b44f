"""Transports as values an operator composes: `session.transports` and `a | b` chains.

Why a chain is not the ranking: the ranking picks the strongest usable transport by
capability. A chain is the operator saying "this one, else that one", in order. Its
one rule is the seed's: the next transport is tried only when the previous one
refused BEFORE any side effect (nothing typed, written or queued); never after one
that may have landed, because that is how one message reaches a receiver twice.
"""

from __future__ import annotations

from typing import Any

from relay_repl.transports.base import Chain, Transport

__all__ = ["Chain", "TransportTable", "chain_of"]


def chain_of(transport: Any) -> Chain | None:
    """A Chain for a Chain or a transport object; None for a name or None."""
    if isinstance(transport, Chain):
        return transport
    if isinstance(transport, Transport):
        return Chain((transport,))
    return None


class TransportTable(dict):
    """`session.transports`: name -> transport; prints each with its capabilities, and
    `session.transports.codex_queue` reaches `codex-queue` (a dash is an underscore)."""

    def __getattr__(self, attr: str) -> Transport:
        for name in (attr, attr.replace("_", "-")):
            if name in self:
                return self[name]
        raise AttributeError(f"no transport {attr!r}; have: {', '.join(self)}")

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *(n.replace("-", "_") for n in self)]

    def __repr__(self) -> str:
        if not self:
            return "no transports"
        rows = [("TRANSPORT", "ATTRIBUTE", "CAPABILITIES")]
        for name, t in self.items():
            caps = ", ".join(k.replace("_", "-") for k, v in t.capabilities.model_dump().items() if v) or "none"
            rows.append((name, f"transports.{name.replace('-', '_')}", caps))
        w = [max(len(r[i]) for r in rows) for i in range(2)]
        lines = ["  ".join((r[0].ljust(w[0]), r[1].ljust(w[1]), r[2])) for r in rows]
        return "\n".join(lines + ["compose: session.transports.codex_queue | session.transports.tmux "
                                  "(the next is tried only if the previous refused before any side effect)"])
