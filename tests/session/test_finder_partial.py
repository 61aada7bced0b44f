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


async def test_a_run_holds_the_kinds_its_specs_name_and_resolves_against_them_without_discovering_again():
    """`Finder.hold` (a recipe run's one discovery): only the kinds named, every target of them held,
    each later resolve of those kinds answered from the held list; another kind drops the hold."""
    claude = Counting("claude-code", "claude", ["alpha", "gamma"])
    codex = Counting("codex", "codex", ["beta"])
    finder = Finder([claude, codex])
    await finder.hold(["claude:alpha", "claude:gamma"])
    assert (claude.calls, codex.calls, finder.refreshed) == (1, 0, False)
    for _ in range(3):  # every step of every round: the list held, as a full refresh's would be
        assert (await finder.resolve("claude:alpha")).name == "alpha"
        assert (await finder.resolve("claude:gamma")).name == "gamma"
    assert claude.calls == 1
    claude.targets.append(target("claude-code", "claude", "alpha", 999))  # a second alpha appears later
    assert (await finder.resolve("claude:alpha")).pid == 100  # the held list decides, as after a refresh
    assert (await finder.resolve("codex:beta")).name == "beta"  # not held: discovered, and the hold dropped
    assert (claude.calls, codex.calls, finder.held) == (1, 1, None)
    with pytest.raises(AmbiguousTarget):
        await finder.resolve("claude:alpha")  # discovered again: both alphas now
    assert claude.calls == 2


async def test_holding_a_spec_that_names_no_kind_refreshes_every_kind():
    claude = Counting("claude-code", "claude", ["alpha"])
    codex = Counting("codex", "codex", ["beta"])
    finder = Finder([claude, codex])
    await finder.hold(["claude:alpha", "%3"])
    assert (claude.calls, codex.calls, finder.refreshed, finder.held) == (1, 1, True, None)
    await finder.hold(["codex:beta"])  # refreshed: nothing more to discover
    assert (claude.calls, codex.calls) == (1, 1)
