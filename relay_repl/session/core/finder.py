"""Finding targets: discovery through the providers, the last list found, and resolving what
the operator typed (`claude:alpha`, `codex:<name or uuid>`, `%<pane>`) to one target.

Its own part of the session because resolving refuses to guess (unknown, ambiguous and stale
each raise one line saying what to do next), and that rule is the same for every command.
"""

from __future__ import annotations

from collections.abc import Sequence

from relay_repl.agents.discovery import Provider, discover_all
from relay_repl.core.errors import AmbiguousTarget, StaleTarget, UnknownTarget, UsageError
from relay_repl.core.target import Target, TargetTable


def _prefixes() -> list[str]:
    """What operators type before a name, one per registered agent kind (for usage errors)."""
    from relay_repl.agents.registry import kinds

    return [k.facts.prefix for k in kinds()]


def _kinds_named(prefix: str) -> set[str]:
    """The registered kind an operator's `prefix` names (`claude` → claude-code), or none.

    Kinds are loaded one at a time, those whose name starts with the prefix first, until one
    answers to it: the others' packages stay unimported before a send's plan."""
    from relay_repl.agents.registry import kind_for, kind_names

    for name in sorted(kind_names(), key=lambda n: not n.startswith(prefix)):
        k = kind_for(name)
        if k is not None and prefix in (k.facts.prefix, k.facts.kind):
            return {k.facts.kind}
    return set()


class Finder:
    """The providers, what they found last, and the one resolution rule."""

    def __init__(self, providers: Sequence[Provider] = ()) -> None:
        self.providers = list(providers)
        self.found: list[Target] = []
        self.refreshed = False
        self.held: frozenset[str] | None = None  # kinds whose every target `found` holds (see `hold`)

    async def refresh(self) -> list[Target]:
        found = await discover_all(self.providers)
        self.found = found
        self.refreshed = True
        self.held = None
        return found

    async def hold(self, specs: Sequence[str]) -> None:
        """Discover once what resolving every one of `specs` needs and resolve them against that list
        from now on, as a full `refresh` would be (a recipe run resolves its targets once): only the
        kinds they name when each names one (`claude:alpha`), else every kind. A run to one Claude
        session waited for every kind's discovery (Codex's daemon, Gemini's /proc scan) before its
        first plan (issue 40). Every target of a kind it discovers is held, so an ambiguous or
        stale name is still refused; specs of other hosts need nothing here."""
        if self.refreshed:
            return
        kinds: set[str] = set()
        for spec in specs:
            named = self._kinds_of(spec)
            if not named:
                await self.refresh()
                return
            kinds |= named
        providers = [p for p in self.providers if getattr(p, "kind", None) in kinds]
        found = await discover_all(providers) if providers else []
        if not self.refreshed:  # a full refresh that landed meanwhile wins
            self.found, self.held = found, frozenset(kinds)

    @staticmethod
    def _kinds_of(spec: str) -> set[str]:
        """The kind a spec names by its prefix (`claude:alpha` → {claude-code}), or none (`%3`, a bare name)."""
        prefix, sep, _ = spec.strip().partition(":")
        return set() if not sep or spec.strip().startswith("%") else _kinds_named(prefix)

    async def known(self) -> list[Target]:
        """The targets found, discovering once if nothing was yet."""
        if not self.refreshed:
            await self.refresh()
        return list(self.found)

    async def _discover_for(self, spec: str) -> list[Target]:
        """Discover what resolving `spec` needs: only the kind it names (`claude:alpha` lists Claude
        sessions, all of them, so an ambiguous or stale name is still refused), else every kind.

        A one-liner's send waited for every kind's discovery (Codex asks its daemon, Gemini reads
        /proc and its panes) before a plan about one Claude session. `refreshed` stays False, so
        whatever wants every target discovers them all; and the partial list becomes the last one
        found only while no full refresh has landed meanwhile (the REPL's runs in the background)."""
        kinds = self._kinds_of(spec)
        if kinds and self.held is not None and kinds <= self.held:
            return list(self.found)  # held for a run (`hold`): resolved against it, not discovered again
        providers = [p for p in self.providers if getattr(p, "kind", None) in kinds]
        if not providers:
            return await self.refresh()
        found = await discover_all(providers)
        if not self.refreshed:
            self.found, self.held = found, None
        return found

    @property
    def table(self) -> TargetTable:
        return TargetTable(self.found)

    async def resolve(self, spec: str | Target) -> Target:
        """Resolve `claude:alpha`, `codex:<name or uuid>`, `%<pane>`, `fake:inbox`.

        Refuses to guess: unknown, ambiguous and stale each raise a one-line
        error saying what to do next.
        """
        if isinstance(spec, Target):
            return spec
        pool = self.found if self.refreshed else await self._discover_for(spec)
        spec = spec.strip()
        if not spec:
            raise UsageError(f"empty target: name one like {', '.join(p + ':NAME' for p in _prefixes())} or %<pane id>")
        if spec.startswith("%"):
            hits = [t for t in pool if t.pane == spec]
        else:
            prefix, sep, name = spec.partition(":")
            if not sep:
                raise UsageError(f"target {spec!r} needs a kind: {' or '.join(p + ':' + spec for p in _prefixes())} "
                                 "(see `relay targets`)")
            # prefixes come from the agent kinds via their targets: a new agent needs no change here
            of_kind = [t for t in pool if prefix in (t.prefix or t.kind, t.kind)]
            if not of_kind:
                kinds = sorted(set(_prefixes()) | {t.prefix or t.kind for t in pool})
                if prefix in kinds:  # a real kind, none of it running: the next step is to find or start one
                    raise UnknownTarget(f"no target {spec}: no {prefix}: session is running here; run `relay targets` "
                                        "to list live sessions (or `relay --lab targets` for the offline lab)")
                raise UsageError(f"unknown kind {prefix!r} in {spec!r}: use "
                                 f"{', '.join(k + ':' for k in kinds)} or %<pane id>")
            hits = [t for t in of_kind if t.name == name or t.address == name]
        live = [t for t in hits if t.live]
        if len(live) == 1:
            return live[0]
        if len(live) > 1:
            cands = "; ".join(t.describe() for t in live)
            raise AmbiguousTarget(f"{spec} is ambiguous, {len(live)} live sessions match: {cands}. Name one by pid or uuid")
        # Not running, yet still reachable by a durable path (an unloaded Codex thread keeps
        # queue rows until it is resumed): resolvable, and the plan says it is not loaded.
        dormant = [t for t in hits if t.transports]
        if len(dormant) == 1:
            return dormant[0]
        if len(dormant) > 1:
            raise AmbiguousTarget(f"{spec} matches {len(dormant)} sessions that are not running: name one by uuid")
        if hits:
            why = hits[0].stale_reason or "its process is gone"
            raise StaleTarget(f"{spec} is stale ({hits[0].describe()}): {why}; nothing will be sent to it")
        raise UnknownTarget(f"no target {spec}: run `relay targets` (or `await session.refresh()`) to list live sessions")
