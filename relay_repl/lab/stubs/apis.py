"""The stub model APIs, found by name: one module per API beside this one.

A kind's lab settings name the API its sessions talk (`LabSpec.stub_api`, e.g. `anthropic`);
the module `relay_repl.lab.stubs.<name>` speaks it, behind the `StubApi` protocol below. The
server, the converser and the session specs ask here, so adding an API (with a kind that talks
it) adds one module and edits no other: nothing in the stub server names an API.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Callable
from typing import Any, Protocol, cast

from aiohttp import web

from relay_repl.lab.stubs.script import LastInput, Reply

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class StubApi(Protocol):
    """What a stub API module provides (module-level names)."""

    SIDE_TEXT: str  # the answer to a request that is not a chat turn
    BASE_PATH: str  # appended to `http://host:port` for the client's base URL ("" or e.g. "/v1")

    def last_input(self, body: dict[str, Any]) -> LastInput: ...

    def side_reason(self, method: str, path: str, body: Any) -> str | None: ...

    def model(self, path: str, body: Any) -> str: ...

    async def respond(
        self, request: web.Request, body: Any, reason: str | None, reply: Reply, model: str,
        released: Callable[[], bool],
    ) -> tuple[web.StreamResponse, bool]: ...


def _is_api(mod: object) -> bool:
    return all(hasattr(mod, n) for n in ("SIDE_TEXT", "BASE_PATH", "last_input", "side_reason", "model",
                                         "respond"))


@functools.cache
def names() -> tuple[str, ...]:
    """Every stub API this package holds (the modules that provide `StubApi`), in name order."""
    import relay_repl.lab.stubs as pkg

    found = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if NAME_RE.match(info.name) and _is_api(importlib.import_module(f"{pkg.__name__}.{info.name}")):
            found.append(info.name)
    return tuple(sorted(found))


def api(name: str) -> StubApi:
    """The module speaking stub API `name`; ValueError when no module here speaks it."""
    if name not in names():
        raise ValueError(f"no stub API {name!r} (known: {', '.join(names())})")
    return cast(StubApi, importlib.import_module(f"relay_repl.lab.stubs.{name}"))


def check(name: str) -> str:
    """`name` when a module here speaks it (a pydantic validator), else ValueError."""
    api(name)
    return name
