"""Discovery's small shared pieces: the provider protocol and a concurrent gather.

Kept apart from `session.py` so that `relay targets` (a cold start measured
against `claude agents --json`) imports only what listing needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from relay_repl.core.target import Target

if TYPE_CHECKING:  # annotations only: core/inbound.py is off the `relay targets` path
    from relay_repl.core.inbound import PeerIdentity


class Provider(Protocol):
    """One agent kind's discovery: lists its targets (live and stale)."""

    kind: str

    async def discover(self) -> list[Target]: ...


class KindProvider(Provider, Protocol):
    """An agent kind's provider: discovery, and the rules agents/origin.py judges an inbox
    message's sender by (`prove_thread(ident, call)` may be added where one process hosts
    several sessions)."""

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        """The session `pid` is (`below`: the pids walked up to reach it), or None."""
        ...

    def claimed_session(self, address: str) -> str | None:
        """The spec of the live session an envelope's claimed `address` names, or None."""
        ...


class StaticProvider:
    """Targets known in advance (the in-memory demo target, tests)."""

    def __init__(self, kind: str, targets: Sequence[Target]) -> None:
        self.kind = kind
        self._targets = list(targets)

    async def discover(self) -> list[Target]:
        return list(self._targets)


async def discover_all(providers: Sequence[Provider]) -> list[Target]:
    """Every provider's targets, gathered concurrently (the Claude listing is a
    subprocess; the other providers' reads overlap it), in provider order.

    In a loopless listing (system/loopless.py) they run one after the other, those that wait
    on a listing subprocess (`waits_on_listing`) last, so the others' reads overlap it."""
    from relay_repl.system import loopless

    results: list[list[Target]] = [[] for _ in providers]
    if loopless.active():
        order = sorted(range(len(providers)), key=lambda i: bool(getattr(providers[i], "waits_on_listing", False)))
        for i in order:
            results[i] = await providers[i].discover()
        return [t for found in results for t in found]
    import anyio

    async def one(i: int, provider: Provider) -> None:
        results[i] = await provider.discover()

    async with anyio.create_task_group() as tg:
        for i, provider in enumerate(providers):
            tg.start_soon(one, i, provider)
    return [t for found in results for t in found]
