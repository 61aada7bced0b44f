"""The transports a session installs, filled from the entry-point group `relay_repl.transports`.

Why entry points, as for the agent kinds: an agent whose sessions are reached by a way of its
own (a socket, a queue) ships that transport beside it and declares

    [project.entry-points."relay_repl.transports"]
    my-way = "my_package.transport:MyTransport.from_context"

so the session builder (session/app.py) names no transport and no kind. Each entry point is a
factory taking the `TransportContext` (the late-bound inbox and peer listing, the operator's
flags) and returning one `Transport`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from relay_repl.system.entry_points import EntryPoint, scan_entry_points  # the one reader of entry points
from relay_repl.core.errors import RelayError
from relay_repl.transports.base import Transport

GROUP = "relay_repl.transports"


@dataclass(frozen=True)
class TransportContext:
    """What a transport factory may need from the session it is built for."""

    inbox: Callable[[], Any] = field(default=lambda: None)
    """The running inbox (receipts, replies) or None: late-bound, it opens after the session exists."""
    registration: Callable[[], Any] = field(default=lambda: None)
    """The inbox's peer listing (AgentKind.replies.inbox_listing) or None: late-bound too."""
    interrupt: bool = False
    """The operator asked for priority delivery, aborting the receiver's running call where a way allows."""
    name: str = ""
    """The entry point's name: the transport being built (a generic transport takes its name from it)."""


@cache
def _entry_points() -> tuple[EntryPoint, ...]:
    found = sorted({ep.name: ep for ep in reversed(scan_entry_points(GROUP))}.values(), key=lambda ep: ep.name)
    if not found:
        raise RelayError(f"no transports are registered (entry-point group {GROUP!r} is empty): reinstall relay_repl "
                         "(`pip install -e .` in a checkout) so its metadata lists them")
    return tuple(found)


def transport_names() -> tuple[str, ...]:
    return tuple(ep.name for ep in _entry_points())


def build_transports(ctx: TransportContext) -> list[Transport]:
    """One of every registered transport, built for `ctx`, in name order."""
    out: list[Transport] = []
    for ep in _entry_points():
        try:
            made = ep.load()(replace(ctx, name=ep.name))
        except Exception as exc:  # a broken third-party transport must not look like a relay bug
            raise RelayError(f"transport {ep.name!r} ({ep.value}) does not load: {type(exc).__name__}: {exc}") from exc
        if not isinstance(made, Transport) or made.name != ep.name:
            raise RelayError(f"transport entry point {ep.name!r} ({ep.value}) did not build the transport {ep.name!r}")
        out.append(made)
    return out
