"""The plain transport choice (agents/plain_choice.py, core/transport_rank.py) against the models'
ranking (transports/ranking.choose over the session's built transports), for every kind and state."""

from __future__ import annotations

import pytest

from relay_repl.agents import plain_facts
from relay_repl.agents.plain_choice import choose, declared_flags, transport_order
from relay_repl.agents.registry import kind_names
from relay_repl.core import transport_rank
from relay_repl.core.target import Target
from relay_repl.core.target_row import TargetRow
from relay_repl.transports.base import Capabilities
from relay_repl.transports.ranking import choose as models_choose
from relay_repl.transports.registry import TransportContext, build_transports


def test_the_flags_are_capabilities_fields():
    assert transport_rank.FLAGS == tuple(Capabilities.model_fields)


def built() -> list:
    return build_transports(TransportContext(inbox=lambda: None, registration=lambda: None, interrupt=False))


def test_the_order_is_the_sessions():
    assert transport_order() == [t.name for t in built()]


@pytest.mark.parametrize("kind", sorted(kind_names()))
def test_each_kinds_declared_flags_are_its_transports_capabilities(kind, monkeypatch):
    monkeypatch.delenv("RELAY_ADAPTERS_DIR", raising=False)
    flags = declared_flags(plain_facts.adapter(kind))
    assert flags, kind
    by_name = {t.name: t for t in built()}
    for name, f in flags.items():
        assert dict(by_name[name].capabilities) == f, (kind, name)


def usable(t, refusal):
    """A built transport whose refusal is given (the ranking's input), nothing else changed."""
    t.refusal = lambda target: refusal
    return t


STATES = ("idle", "busy", "waiting", "never-idle", "unknown")


@pytest.mark.parametrize("kind", sorted(kind_names()))
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("pane", [None, "%1"])
def test_the_plain_choice_is_the_models_for_every_usable_set(kind, state, pane, monkeypatch):
    from itertools import product

    from relay_repl.core.errors import PolicyRefusal

    monkeypatch.delenv("RELAY_ADAPTERS_DIR", raising=False)
    flags = declared_flags(plain_facts.adapter(kind))
    assert flags is not None
    offered = sorted(flags)
    by_name = {t.name: t for t in built()}
    fields = dict(kind=kind, name="x", address="x", pid=1, state=state, pane=pane, transports=tuple(offered),
                  identified_by="test")
    row, target = TargetRow(**fields), Target(**fields)
    for refused in product([False, True], repeat=len(offered)):
        refusals = {n: ("no" if r else None) for n, r in zip(offered, refused)}
        plain = choose(row, refusals, flags, transport_order())
        ranked = [usable(by_name[n], refusals.get(n) or (f"{n} needs a pane" if by_name[n].capabilities.needs_pane and not pane else None))
                  for n in transport_order() if n in by_name]
        try:
            c = models_choose(target, ranked)
            models = (c.transport.name, c.fallback, tuple(c.notes))
        except PolicyRefusal:
            models = None
        assert plain == models, (kind, state, pane, refusals)
