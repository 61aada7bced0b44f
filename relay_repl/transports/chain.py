"""Transports as values an operator composes: `session.transports` and `a | b` chains.

Why a chain is not the ranking: the ranking picks the strongest usable transport by
capability. A chain is the operator saying "this one, else that one", in order. Its
one rule is the seed's: the next transport is tried only when the previous one
refused BEFORE any side effect (nothing typed, written or queued); never after one
that may have landed, because that is how one message reaches a receiver twice.

Why handles and not the transport objects: what the operator (or anything running in
the REPL) can reach from `session` must offer side effects only through plan and gate.
`session.transports.X` is a `TransportHandle`: its name, capabilities and refusal
(read-only), `send(target, body, ...)` which IS `session.send(target, body,
transport=X, ...)` (plan, y/N, confirm), and `|` to compose. The transport object with
its raw queue, socket and pane I/O stays inside the session; its primitives refuse
anyway without the gate's approval (core/approval.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

from relay_repl.core.target import Target
from relay_repl.transports.base import Capabilities, Chain, Transport

__all__ = ["Chain", "TransportHandle", "TransportTable", "chain_of", "raw_of"]

SendFn = Callable[..., Awaitable[Any]]
"""`session.send(target, body, *, transport=..., **kw)`: what a handle delegates to."""


class TransportHandle:
    """`session.transports.X`: one transport as the operator holds it (see the module doc)."""

    __slots__ = ("_t", "_send")
    _t: Transport
    _send: SendFn

    def __init__(self, transport: Transport, send: SendFn) -> None:
        object.__setattr__(self, "_t", transport)
        object.__setattr__(self, "_send", send)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a transport handle is read-only; set session.transports[NAME] = transport instead")

    @property
    def name(self) -> str:
        return self._t.name

    @property
    def capabilities(self) -> Capabilities:
        return self._t.capabilities

    def refusal(self, target: Target) -> str | None:
        """Why this transport cannot serve `target`, or None (read-only)."""
        return self._t.refusal(target)

    async def send(self, target: str | Target, body: str, **kw: Any) -> Any:
        """`session.send(target, body, transport=<this>, ...)`: planned, asked y/N, confirmed."""
        return await self._send(target, body, transport=self, **kw)

    def __or__(self, other: Any) -> Chain:
        if isinstance(other, (TransportHandle, Transport)):
            return Chain((self, other))
        if isinstance(other, Chain):
            return Chain((self,)) | other
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TransportHandle) and other._t is self._t

    def __hash__(self) -> int:
        return id(self._t)

    def __repr__(self) -> str:
        return repr(self._t)


def raw_of(member: Any) -> Transport:
    """The transport object behind a handle (or the object itself)."""
    return member._t if isinstance(member, TransportHandle) else member


def chain_of(transport: Any) -> Chain | None:
    """A Chain for a Chain, a handle or a transport object; None for a name or None."""
    if isinstance(transport, Chain):
        return transport
    if isinstance(transport, (Transport, TransportHandle)):
        return Chain((transport,))
    return None


class TransportTable(MutableMapping[str, TransportHandle]):
    """`session.transports`: name -> handle; prints each with its capabilities, and
    `session.transports.codex_queue` reaches `codex-queue` (a dash is an underscore).
    `session.transports[NAME] = transport` installs a transport in the session."""

    def __init__(self, raw: dict[str, Transport], send: SendFn) -> None:
        self._raw = raw
        self._send = send

    def __getitem__(self, name: str) -> TransportHandle:
        return TransportHandle(self._raw[name], self._send)

    def __setitem__(self, name: str, transport: Any) -> None:
        transport = raw_of(transport)
        if not isinstance(transport, Transport):
            raise TypeError(f"session.transports[{name!r}] must be a transport")
        self._raw[name] = transport

    def __delitem__(self, name: str) -> None:
        del self._raw[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __getattr__(self, attr: str) -> TransportHandle:
        if attr.startswith("_"):
            raise AttributeError(attr)
        for name in (attr, attr.replace("_", "-")):
            if name in self._raw:
                return self[name]
        raise AttributeError(f"no transport {attr!r}; have: {', '.join(self._raw)}")

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *(n.replace("-", "_") for n in self._raw)]

    def __repr__(self) -> str:
        if not self._raw:
            return "no transports"
        rows = [("TRANSPORT", "ATTRIBUTE", "CAPABILITIES")]
        for name, t in self._raw.items():
            caps = ", ".join(k.replace("_", "-") for k, v in t.capabilities.model_dump().items() if v) or "none"
            rows.append((name, f"transports.{name.replace('-', '_')}", caps))
        w = [max(len(r[i]) for r in rows) for i in range(2)]
        lines = ["  ".join((r[0].ljust(w[0]), r[1].ljust(w[1]), r[2])) for r in rows]
        return "\n".join(lines + ["compose: session.transports.codex_queue | session.transports.tmux "
                                  "(the next is tried only if the previous refused before any side effect)"])
