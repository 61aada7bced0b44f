"""A transport that carries one kind's own way to deliver (a socket, a queue): generic code,
bound by name to the kind that offers it.

Why: such a transport must not name or branch on a kind. Its name is data (the entry point's
name, the adapter's `[[transports]]` entry), and so are its capability flags: the adapter file
declares them once (agents/adapter.py `TransportSpec`), and the transport reads them from there
instead of repeating them. Every fact it needs about a target is asked of the target's own kind
through `way(kind)` (`kind.transports.socket_wire()`, `kind.transports.durable_queue()`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from relay_repl.agents.kind import AgentKind
from relay_repl.agents.registry import kind_for, kind_names
from relay_repl.agents.versions import unverified_refusal
from relay_repl.core.errors import RelayError, TransportError
from relay_repl.core.target import Target
from relay_repl.transports.base import Capabilities, Transport

_FLAGS = tuple(Capabilities.model_fields)


class Way(Protocol):
    relies_on: str
    """The reverse-engineered behaviour the transport trusts, in words (the version gate)."""


W = TypeVar("W", bound=Way)


def asked_first(name: str) -> list[str]:
    """The registered kinds in the order `offered` asks them: those whose name starts transport
    `name` (`codex` for `codex-queue`, as adapters name their own transports) first, then the rest,
    each group in name order. A kind is loaded (its package imported) only when asked, so a send to
    Codex ranks codex-queue without importing the Claude package first (issue 40: ~10 ms of a cold
    `relay send codex:...` before its plan, and Claude's adapter file read)."""
    names = kind_names()
    return sorted(names, key=lambda k: not name.startswith(k + "-"))


def offered(name: str, way: Callable[[AgentKind], Any]) -> tuple[AgentKind, Capabilities]:
    """The first registered kind (those whose name starts `name` first, then name order: `asked_first`)
    whose adapter offers transport `name` and whose `way(kind)` (e.g. `kind.transports.socket_wire()`)
    is not None, with the capabilities it declares."""
    for kind_name in asked_first(name):  # loaded one at a time: the first that offers it ends the search
        k = kind_for(kind_name)
        if k is None:
            continue
        for spec in k.transports.specs():
            if spec.name == name and way(k) is not None:
                return k, Capabilities(**{f: getattr(spec, f) for f in _FLAGS})
    raise RelayError(f"no registered agent kind offers the transport {name!r} (no adapter lists it with the way "
                     "it needs): reinstall relay_repl so its entry points match its agent packages")


class KindWayTransport(Transport, Generic[W]):
    """The part every such transport shares: its name and flags, the target kind's way, refusals."""

    way_noun: ClassVar[str]
    """What the way is called in messages ("messaging socket")."""

    @staticmethod
    def way(kind: AgentKind) -> W | None:
        """The kind's way (`kind.transports.socket_wire()`), or None when it has none."""
        raise NotImplementedError

    def __init__(self, name: str, *, defer: bool = False) -> None:
        """`defer`: find the offering kind on first use (the session's factories, `from_context`),
        not now (a transport made by hand is refused at once when no kind offers it)."""
        self.name = name
        self._offer: tuple[AgentKind, Capabilities] | None = None
        if not defer:
            self._offered()

    def _offered(self) -> tuple[AgentKind, Capabilities]:
        """The kind that offers this transport and the flags it declares (the first in name order).
        Deferred in a session: it builds every transport but ranks only those its target offers,
        so a send to Claude or Gemini loads no other kind's package before its plan (issue 40)."""
        if self._offer is None:
            self._offer = offered(self.name, self.way)
        return self._offer

    @property
    def _kind(self) -> AgentKind:
        return self._offered()[0]

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]  # the kind's adapter's, read on first use
        return self._offered()[1]

    def way_for(self, target: Target) -> W | None:
        """The target's own kind's way, or None (its kind is not registered or has none)."""
        k = kind_for(target.kind)
        return self.way(k) if k is not None else None

    def way_of(self, target: Target) -> W:
        found = self.way_for(target)
        if found is None:  # refusal() keeps such a target out of any plan
            raise TransportError(f"{target.spec}'s agent has no {self.way_noun}: {self.name} cannot reach it")
        return found

    def way_refusal(self, target: Target) -> str | None:
        """Not offered by the target, or its kind has no such way."""
        if self.name not in target.transports:
            return f"{target.spec} does not offer {self.name} (its agent lists {', '.join(target.transports) or 'none'})"
        if self.way_for(target) is None:
            return f"{target.spec}'s agent has no {self.way_noun}"
        return None

    def version_refusal(self, target: Target) -> str | None:
        """The version policy, naming what the target kind's way trusts."""
        found = self.way_for(target)
        if found is None or target.client_status != "unverified":
            return None
        return unverified_refusal(target.kind, target.client_version, found.relies_on)

    def evidence_name(self, target: Target) -> str:
        """What the receiver's evidence file is called in messages ("transcript", "rollout")."""
        k = kind_for(target.kind)
        return k.evidence.evidence_name if k is not None else "record"

    def label(self, target: Target) -> str:
        """The target's client for humans ("Codex"), in messages."""
        k = kind_for(target.kind)
        return k.facts.label if k is not None else self._kind.facts.label
