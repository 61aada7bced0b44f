"""What the equivalence tests of `relay run`'s plain pre-plan compare (frontends/run_plain.py, issue 40):
the first plan phase 1 prints and the first plan the models build for the same run, as `relay run`
builds it (the inbox opened as `cmd_run` opens it, `run_recipe` with the run id and first relay id
phase 1 took, pinned), and what the run said before that plan. Both in one process, so the operator's
address and the inbox socket in the plan are the same. Any kind's tests use these.
"""

from __future__ import annotations

import io
import os
from typing import Any

import anyio

from relay_repl.frontends import run_plain


def plain_run(recipe: str, key: str, value: str) -> tuple[run_plain.RunPlan, str]:
    """(what phase 1 left, what it printed) for `relay run recipe -p key=value`."""
    out = io.StringIO()
    pre = run_plain.preplan(recipe, key, value, dict(os.environ), out)
    return pre, out.getvalue()


def models_run(recipe: str, params: dict[str, str], run_id: str | None, relay_id: str | None, *,
               listing: dict[str, Any] | None = None, gate: Any = None) -> tuple[Any, list[str], Any]:
    """(the first `Plan` the models ask about for `relay run recipe` with the ids (and a Claude run's `listing`)
    pinned, what the run said before it, the session). The gate says No, so nothing is sent, unless `gate` is
    given: then the run goes on as that gate answers and the plan is None (what was said, the session)."""
    from relay_repl.frontends.commands.common import inbox_open
    from relay_repl.session.app import make_session
    from relay_repl.session.runs.recipes import run_recipe

    said: list[str] = []
    shown: list[tuple[Any, list[str]]] = []

    async def no(plan: Any) -> bool:
        shown.append((plan, list(said)))
        return False

    async def go() -> Any:
        session = make_session(approve=gate or no, echo=said.append)
        async with inbox_open(session, said.append):
            await run_recipe(session, recipe, params, echo=said.append, run_id=run_id, first_relay_id=relay_id,
                             listing=listing)
        return session

    session = anyio.run(go)
    if gate is not None:
        return None, said, session
    assert len(shown) == 1, shown
    return shown[0][0], shown[0][1], session


def same_run_plan(recipe: str, key: str, value: str, attempts: int = 1) -> dict[str, Any]:
    """Phase 1's first plan of the run, asserted equal (fields, digest, printed bytes) to the models' first
    plan for the same ids, with nothing said before it; its fields. `attempts`: phase 1 asked up to that
    many times, 0.5 s apart, while it hands the run to the models (a live screen captured mid-redraw on a
    loaded machine is refused plainly, by design: the models look again); the plan it then shows is
    compared all the same."""
    import time

    from relay_repl.core.approval import plan_digest

    pre, printed = plain_run(recipe, key, value)
    for _ in range(attempts - 1):
        if pre.fields is not None:
            break
        time.sleep(0.5)
        pre, printed = plain_run(recipe, key, value)
    assert pre.fields is not None, "the plain path handed this run to the models"
    assert pre.run_id is not None and pre.relay_id is not None
    plan, before, _ = models_run(recipe, {key: value}, pre.run_id, pre.relay_id)
    assert before == []
    assert pre.fields == plan.model_dump(mode="json")
    assert pre.digest == plan_digest(plan)
    assert printed == plan.render() + "\n"
    return pre.fields


PIN = """
import io, os, sys
from relay_repl.frontends.run_plain import preplan
pre = preplan('ping', 'target', sys.argv[1], dict(os.environ), io.StringIO())
heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'pydantic_core', 'asyncio', 'anyio', 'libtmux',
                                                          'annotated_types', 'prompt_toolkit'})
agents = sorted(m for m in sys.modules if m in ('relay_repl.agents', 'relay_repl.transports', 'relay_repl.session.runs'))
print('PIN', pre.digest is not None, heavy, agents, 'dataclasses' in sys.modules)
"""


def phase_one_modules(target: str) -> str:
    """`relay run ping -p target=TARGET`'s phase 1 in a fresh process: "PIN <plan shown> <heavy modules loaded>
    <agents/transports/runs packages loaded> <dataclasses loaded>" (all empty/False on the plain path)."""
    import subprocess
    import sys
    from pathlib import Path

    r = subprocess.run([sys.executable, "-c", PIN, target], capture_output=True, text=True, timeout=60,
                       cwd=Path(__file__).parents[2], env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()[-1]
