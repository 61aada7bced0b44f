"""`relay run ping -p target=gemini:NAME`'s first plan printed before the models (frontends/run_plain.py with
Gemini's hooks: agents/gemini_cli/plain_plan.plan_parts and reply_route) against the first plan the models
ask about for the same run id and relay id (tests/frontends/run_plain_helpers.py): fields, digest, bytes,
reply route included, over a fake Gemini session redrawing a recorded screen (test_gemini_plain_plan.redraw)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.agents.gemini_cli.test_gemini_plain_plan import models, redraw
from tests.frontends.run_plain_helpers import phase_one_modules, plain_run, same_run_plan
from tests.frontends.test_targets_plain import gemini, world  # noqa: F401


@pytest.mark.parametrize("capture", ["after_turn", "busy"])
def test_ping_plans_plainly_as_the_models_plan_it(capture, gemini):  # noqa: F811
    """No settings.json: no sandbox, so `relay reply` into this process's inbox. Old code: `relay run` had no
    plain path (run_plain does not exist), and Gemini's plain plan had no reply route."""
    redraw(gemini, capture)
    models("gemini:proj")  # the session creates the ledger, as a first `relay send` would
    fields = same_run_plan("ping", "target", "gemini:proj")
    assert fields["heading"].endswith("round 1/1, step 1: tell gemini:proj")
    assert fields["reply_route"].startswith("gemini:proj answers by running `relay reply ")
    assert f"/inbox/{os.getpid()}.sock" in fields["reply_route"]


def test_the_route_follows_the_sessions_settings_json(gemini):  # noqa: F811
    """A sandbox in settings.json with the relay MCP server (not trusted): relay_reply on it, with the trust note."""
    redraw(gemini, "after_turn")
    models("gemini:proj")
    settings = Path(os.environ["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"tools": {"sandbox": "docker"},
                                    "mcpServers": {"relay": {"command": "relay", "args": ["mcp"]}}}))
    fields = same_run_plan("ping", "target", "gemini:proj")
    assert fields["reply_route"].startswith("the agent calls relay_reply") and "not `trust: true`" in fields[
        "reply_route"]


def test_a_pane_with_a_draft_is_left_to_the_models(gemini):  # noqa: F811
    """Preflight would refuse (a draft in the composer): nothing printed, the ids handed over."""
    redraw(gemini, "idle_draft")
    models("gemini:proj")
    pre, printed = plain_run("ping", "target", "gemini:proj")
    assert printed == "" and pre.digest is None and pre.run_id is not None


def test_phase_one_loads_no_pydantic_event_loop_or_libtmux(gemini):  # noqa: F811
    """`relay run`'s phase 1 for a Gemini session, reply route included, imports no pydantic, asyncio, anyio,
    libtmux or prompt_toolkit, nor the agents, transports or runs packages. Old code: no run_plain module."""
    redraw(gemini, "busy")
    models("gemini:proj")
    assert phase_one_modules("gemini:proj") == "PIN True [] [] False"
