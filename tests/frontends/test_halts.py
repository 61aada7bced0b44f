"""`relay halts` lists the relay-halts in force (who, why, when), read-only; `relay unhalt` clears
exactly the halts its plan named, after y (issue 39: before, only `session.unhalt()` in the REPL)."""

from __future__ import annotations

import json

import pytest

from relay_repl.frontends import cli
from relay_repl.frontends.commands import common
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.store.ledger import Ledger


def halted(relay_home) -> Ledger:
    relay_home.mkdir(parents=True, exist_ok=True)
    led = Ledger(relay_home / "ledger.sqlite")
    led.halt("relay-halt received in inbox #4 from agent:codex@beta", by="agent:codex@beta")
    led.halt("operator halt", by="operator:relay@me")
    return led


def test_halts_lists_who_why_when_and_changes_nothing(relay_home, capsys):
    assert cli.main(["halts"]) == 0
    assert capsys.readouterr().out == "no relay-halt in force\n"
    assert not relay_home.exists()  # read-only: a fresh machine stays fresh
    halted(relay_home).close()
    before = sorted((p.name, p.read_bytes()) for p in relay_home.iterdir())
    assert cli.main(["halts"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("2 relay-halt(s) in force")
    assert out[1].startswith("  #1  20") and out[1].endswith("by agent:codex@beta: relay-halt received in inbox #4 "
                                                             "from agent:codex@beta")
    assert out[2].endswith("by operator:relay@me: operator halt")
    assert cli.main(["halts", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["halts"]
    assert [(h["seq"], h["by"]) for h in got] == [(1, "agent:codex@beta"), (2, "operator:relay@me")]
    assert sorted((p.name, p.read_bytes()) for p in relay_home.iterdir()) == before


class HaltMeanwhile(ScriptedGate):
    """Says `answer`, and while its plan is on screen a third halt arrives."""

    def __init__(self, led: Ledger, answer: bool) -> None:
        super().__init__([answer])
        self.led = led

    async def __call__(self, plan):
        self.led.halt("relay-halt received in inbox #9", by="agent:claude-code@alpha")
        return await super().__call__(plan)


@pytest.mark.parametrize("answer", [True, False])
def test_unhalt_clears_only_the_halts_its_plan_named_after_y(relay_home, capsys, monkeypatch, answer):
    led = halted(relay_home)
    gate = HaltMeanwhile(led, answer)
    monkeypatch.setattr(common, "stderr_gate", lambda say: gate)
    code = cli.main(["unhalt"])
    (plan,) = gate.shown
    assert plan.action == "clear 2 relay-halt(s)"
    assert "by agent:codex@beta: relay-halt received in inbox #4" in plan.payload and "operator halt" in plan.payload
    assert "inbox #9" not in plan.payload
    left = [h.reason for h in led.halts_in_force()]
    if answer:
        assert code == 0 and "cleared 2 relay-halt(s)" in capsys.readouterr().out
        assert left == ["relay-halt received in inbox #9"]  # arrived after the plan was shown: stays
    else:
        assert code == 1 and "declined: no halt was cleared" in capsys.readouterr().out
        assert len(left) == 3
    assert [e.data["approved"] for e in led.events(kind="answer")] == [answer]


def test_unhalt_with_nothing_in_force_asks_nothing(relay_home, capsys, monkeypatch):
    monkeypatch.setattr(common, "stderr_gate", lambda say: pytest.fail("asked"))
    assert cli.main(["unhalt"]) == 0
    assert "no relay-halt in force" in capsys.readouterr().out and not relay_home.exists()
