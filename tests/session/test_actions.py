"""The operator's own actions behind relay's gate (issue 39): `session.confirm` and `session.gated`.

The plan is the ordinary four-part one, shown and asked by the session's approver (the same gate a
send goes through: a TerminalGate here discards typed-ahead keys exactly as for a send), recorded in
the ledger (plan, answer, outcome) under an `action-...` id; a No raises `Declined` and runs nothing;
a relay-halt in force is refused before asking, and one arriving while the plan is shown wins over y.
"""

from __future__ import annotations

import anyio
import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.input.typeahead import store_typeahead
from prompt_toolkit.key_binding import KeyPress

from relay_repl.core.approval import Approval, check, is_live
from relay_repl.core.errors import Declined, LoopHalt, NoApproval, UsageError
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate, TerminalGate
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from tests.session.test_gate import _output, _prompt_up, _Screen

pytestmark = pytest.mark.anyio

KILL = dict(target="claude:alpha (pane %3)", how="tmux kill-pane", payload="kill-pane -t %3",
            done_when="tmux no longer lists pane %3")


def mk(tmp_path, approve) -> tuple[Session, Ledger]:
    led = Ledger(tmp_path / "l.sqlite")
    return Session(ledger=led, approve=approve, me=Me(address="me")), led


async def test_y_returns_an_approval_bound_to_the_plan_shown(tmp_path):
    gate = ScriptedGate([True])
    s, led = mk(tmp_path, gate)
    a = await s.confirm("kill the stuck pane", **KILL)
    (plan,) = gate.shown
    text = plan.render()
    assert text.startswith("Plan: kill the stuck pane  (relay id action-")
    for part in ("1 target      claude:alpha (pane %3) — identified by named by you",
                 "2 transport   your code: tmux kill-pane; fallback: none", "3 payload     kill-pane -t %3",
                 "4 delivered   tmux no longer lists pane %3"):
        assert part in text
    assert isinstance(a, Approval) and is_live(a)
    assert a.scope.payload == "kill-pane -t %3" and a.scope.relay_id == plan.relay_id
    events = led.events(relay_id=plan.relay_id)
    assert [e.kind for e in events] == ["plan", "answer"]
    assert events[1].data == {"approved": True, "approval": a.digest}
    # its transport is no relay transport's name: it cannot stand in for a send's approval
    with pytest.raises(NoApproval, match="transport"):
        check(a, what="typing", transport="tmux")


async def test_n_raises_declined_and_records_it(tmp_path):
    gate = ScriptedGate([False])
    s, led = mk(tmp_path, gate)
    with pytest.raises(Declined, match="declined: kill the stuck pane was not done"):
        await s.confirm("kill the stuck pane", **KILL)
    rid = gate.shown[0].relay_id
    assert [e.kind for e in led.events(relay_id=rid)] == ["plan", "answer", "outcome"]
    assert led.events(relay_id=rid, kind="outcome")[0].data["state"] == "withheld"


async def test_gated_runs_the_action_only_after_y(tmp_path):
    ran: list[str] = []

    async def restart(pane: str, *, hard: bool = False) -> str:
        ran.append(pane)
        return f"restarted {pane}"

    gate = ScriptedGate([False, True])
    s, led = mk(tmp_path, gate)
    guarded = s.gated(restart, "restart a pane", target="claude:alpha", how="tmux respawn-pane",
                      done_when="a fresh prompt in the pane")
    with pytest.raises(Declined):
        await guarded("%3", hard=True)
    assert ran == []
    assert await guarded("%3", hard=True) == "restarted %3"
    assert ran == ["%3"]
    shown = gate.shown[1]
    assert shown.payload == "test_gated_runs_the_action_only_after_y.<locals>.restart('%3', hard=True)"
    outcome = led.events(relay_id=shown.relay_id, kind="outcome")[0].data
    assert outcome["state"] == "done"


async def test_gated_as_a_decorator_records_a_failure(tmp_path):
    gate = ScriptedGate([True])
    s, led = mk(tmp_path, gate)

    @s.gated(target="the build box", how="a shell command", payload="make clean", done_when="make exits 0")
    async def clean() -> None:
        raise RuntimeError("make: no rule")

    with pytest.raises(RuntimeError):
        await clean()
    out = led.events(relay_id=gate.shown[0].relay_id, kind="outcome")[0].data
    assert out["state"] == "failed" and "make: no rule" in out["reason"]


async def test_a_halt_in_force_is_refused_before_asking(tmp_path):
    gate = ScriptedGate([True])
    s, led = mk(tmp_path, gate)
    s.halt("peer said stop")
    with pytest.raises(LoopHalt, match="relay-halt is in force"):
        await s.confirm("kill the stuck pane", **KILL)
    assert gate.shown == []


async def test_a_halt_arriving_while_the_plan_is_shown_wins_over_y(tmp_path):
    ran: list[int] = []
    s: Session | None = None

    async def halting_yes(plan) -> bool:
        assert s is not None
        s.ledger.halt("relay-halt received in inbox #1", by="agent:codex@beta")
        return True

    s, led = mk(tmp_path, halting_yes)

    async def act() -> None:
        ran.append(1)

    with pytest.raises(LoopHalt, match="withheld: relay-halt from agent:codex@beta arrived while the plan was shown"):
        await s.gated(act, target="x", how="y", done_when="z")()
    assert ran == []


async def test_a_no_answered_while_a_halt_arrives_is_declined_not_halted(tmp_path):
    s: Session | None = None

    async def halting_no(plan) -> bool:
        assert s is not None
        s.ledger.halt("relay-halt received in inbox #1", by="agent:codex@beta")
        return False

    s, led = mk(tmp_path, halting_no)
    with pytest.raises(Declined, match="declined: .* was not done"):
        await s.confirm("kill the stuck pane", **KILL)
    assert led.events(kind="outcome")[-1].data["reason"] == "the operator answered No"


async def test_words_are_required_for_each_part(tmp_path):
    s, _ = mk(tmp_path, ScriptedGate([True]))
    with pytest.raises(UsageError, match="done_when"):
        await s.confirm("kill", target="x", how="y", done_when=" ")


async def test_typed_ahead_keys_never_answer_an_own_action(tmp_path):
    """The same terminal gate as a send: `y` + Enter typed before the plan was shown are dropped."""
    screen = _Screen()
    shown: list[str] = []
    with create_pipe_input() as inp:
        store_typeahead(inp, [KeyPress(c) for c in "y"])
        s, _ = mk(tmp_path, TerminalGate(input=inp, output=_output(screen), write=shown.append))
        result: list[object] = []
        async with anyio.create_task_group() as tg:
            async def ask() -> None:
                try:
                    result.append(await s.confirm("kill the stuck pane", **KILL))
                except Declined as exc:
                    result.append(exc)

            tg.start_soon(ask)
            await _prompt_up(screen)
            inp.send_text("\r")
    assert isinstance(result[0], Declined)
    assert any("typed before this plan was shown: discarded" in line for line in shown)
