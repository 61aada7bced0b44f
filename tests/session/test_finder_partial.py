"""Resolving a spec before any refresh discovers only the kind it names (issue 40), all of that kind
(an ambiguous or stale name is still refused), and never leaves a partial list as the last one
found once a full refresh has landed (the REPL refreshes in the background while a send resolves)."""

from __future__ import annotations

import anyio
import pytest

from relay_repl.core.errors import AmbiguousTarget, UnknownTarget
from relay_repl.core.target import Target
from relay_repl.session.core.finder import Finder

pytestmark = pytest.mark.anyio


def target(kind: str, prefix: str, name: str, pid: int) -> Target:
    return Target(kind=kind, prefix=prefix, name=name, address=f"{kind}-{pid}", pid=pid, live=True, state="idle",
                  identified_by="test")


class Counting:
    """A provider of one registered kind, counting its discoveries, optionally slow."""

    def __init__(self, kind: str, prefix: str, names: list[str], delay: float = 0.0) -> None:
        self.kind, self.delay, self.calls = kind, delay, 0
        self.targets = [target(kind, prefix, n, 100 + i) for i, n in enumerate(names)]

    async def discover(self) -> list[Target]:
        self.calls += 1
        await anyio.sleep(self.delay)
        return list(self.targets)


async def test_a_spec_discovers_only_its_kind_and_all_of_it():
    claude = Counting("claude-code", "claude", ["alpha", "alpha"])
    codex = Counting("codex", "codex", ["beta"])
    finder = Finder([claude, codex])
    with pytest.raises(AmbiguousTarget):  # both Claude sessions were discovered: the name is refused
        await finder.resolve("claude:alpha")
    assert (claude.calls, codex.calls, finder.refreshed) == (1, 0, False)
    assert (await finder.resolve("codex:beta")).name == "beta"
    assert (claude.calls, codex.calls) == (1, 1)
    assert {t.kind for t in await finder.known()} == {"claude-code", "codex"}  # known() wants them all


async def test_a_pane_or_an_unknown_prefix_discovers_every_kind():
    claude = Counting("claude-code", "claude", ["alpha"])
    codex = Counting("codex", "codex", ["beta"])
    finder = Finder([claude, codex])
    with pytest.raises(UnknownTarget):
        await finder.resolve("%9")
    assert (claude.calls, codex.calls, finder.refreshed) == (1, 1, True)


async def test_a_partial_discovery_never_replaces_a_full_refresh_that_landed_meanwhile():
    claude = Counting("claude-code", "claude", ["alpha"], delay=0.3)  # the send's partial discovery is slow
    codex = Counting("codex", "codex", ["beta"])
    finder = Finder([claude, codex])
    resolved: list[Target] = []

    async def send() -> None:
        resolved.append(await finder.resolve("claude:alpha"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(send)
        await anyio.sleep(0.05)
        claude.delay = 0.0
        await finder.refresh()  # the REPL's background refresh lands first
    assert resolved[0].name == "alpha"
    assert finder.refreshed and {t.spec for t in finder.found} == {"claude:alpha", "codex:beta"}
