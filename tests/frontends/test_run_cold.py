"""What a cold `relay run RECIPE -p target=claude:NAME` loads and reads before its first plan (issue 40).

A run's first plan is waited for like a send's (goal <= 200 ms, bench/oneliners.py). The run
discovered every kind (a full refresh: Codex's daemon and /proc locks, Gemini's /proc scan) before
resolving a recipe that names one Claude session; now it discovers only the kinds its targets name
(`Finder.hold`), once for the whole run, and loads no notebook runner for a TOML recipe. The probe
is test_send_cold's: it stops at the gate and reports what was loaded, opened and spawned by then."""

from __future__ import annotations

import ast

from tests.frontends.test_send_cold import NOT_BEFORE_A_CLAUDE_PLAN, probe_in_a_claude_world, stand_in_claude

# one plain send (no answer awaited: a Claude peer listing would first ask `claude --version`)
TELL = """name = "tell"
description = "one plain line"
rounds = 1

[params.target]
type = "target"
description = "who"

[[steps]]
kind = "tell"
to = "{target}"
body = "hello from the cold run test ({run})"
"""


def test_a_cold_run_discovers_only_the_kinds_its_targets_name_before_its_first_plan(tmp_path):
    recipe = tmp_path / "tell.toml"
    recipe.write_text(TELL)
    lines, homes = probe_in_a_claude_world(tmp_path, "run", str(recipe), "-p", "target=claude:alpha")
    loaded = set(ast.literal_eval(lines["MODULES"]))
    assert {"relay_repl.core.plan", "relay_repl.session.runs.runner"} <= loaded  # the probe saw the run's own imports
    assert {m for m in loaded if m.split(".")[0] in {"websockets", "prompt_toolkit"} or m in NOT_BEFORE_A_CLAUDE_PLAN} == set()
    assert {m for m in loaded if m.startswith("relay_repl.frontends.commands.")} <= {
        f"relay_repl.frontends.commands.{m}" for m in ("run", "common")}  # not the notebook runner
    opened = ast.literal_eval(lines["OPENED"])
    assert [p for p in opened if p.startswith((str(homes["codex"]), str(homes["gemini"])))] == []  # no other kind's discovery
    assert any(p.startswith(str(homes["claude"] / "sessions")) for p in opened)  # Claude's own was read
    assert [a for a in ast.literal_eval(lines["SPAWNED"]) if a[1:3] == ["agents", "--json"]] == []
    assert lines["GC"] == "0 True"  # issue 40: no collection before the first plan, the collector back once it is shown


def ping_a_claude(tmp_path):
    """A stand-in `claude` for the verified client (it answers `--version`), and the probe's lines and
    homes of `relay run ping -p target=claude:alpha` stopped at its first plan (the inbox listing's)."""
    claude = stand_in_claude(tmp_path)
    return claude, probe_in_a_claude_world(tmp_path, "run", "ping", "-p", "target=claude:alpha",
                                           path=f"{claude.parent}:/usr/bin:/bin", plan="Claude registry ")


def test_a_cold_ping_to_claude_loads_only_the_listing_kind_before_its_first_plan(tmp_path):
    """`ping` waits for an ack, which a Claude session sends only to a listed peer: the run's first
    plan lists the inbox in Claude's registry (for the verified client: a stand-in `claude` answers
    `--version`). The kind that lists peers is found kind by kind, not by loading every kind."""
    claude, (lines, homes) = ping_a_claude(tmp_path)
    loaded = set(ast.literal_eval(lines["MODULES"]))
    assert "relay_repl.agents.claude_code.peer" in loaded  # the probe saw the listing's own imports
    assert {m for m in loaded if m.split(".")[0] in {"websockets", "prompt_toolkit"} or m in NOT_BEFORE_A_CLAUDE_PLAN} == set()
    opened = ast.literal_eval(lines["OPENED"])
    assert [p for p in opened if p.startswith((str(homes["codex"]), str(homes["gemini"])))] == []
    assert lines["GC"] == "0 True"  # the registry plan is a plan too: the collector is back once it is shown


def test_a_cold_ping_to_claude_asks_the_version_once_before_the_models_load_and_plans_the_listing_plainly(
        tmp_path, monkeypatch):
    """issue 40: the listing's `claude --version` (the verified-client check) ran after ~0.15 s of the
    models' imports, in series with them; the run's plain phase 1 starts it (the kind's
    `reply_route_soon`), reads its answer for the listing's plan it prints (`inbox_listing_plan`), and the
    models take the same process's answer: one `--version`, spawned before pydantic loads. Phase 1 reads the
    registry (the listing's anchor and name) before the models exist; the models read it again to build the
    plan they act on, whose digest the gate compares with the one shown."""
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.paths import ledger_path

    monkeypatch.setenv("RELAY_HOME", str(tmp_path / "relay"))  # the probe's: a ledger there, as an operator has one
    Ledger(ledger_path()).close()  # (the plain pre-plan reads only a ledger that exists)
    claude, (lines, homes) = ping_a_claude(tmp_path)
    spawned, models = ast.literal_eval(lines["SPAWNED"]), ast.literal_eval(lines["MODELS_AT_SPAWN"])
    versions = [i for i, a in enumerate(spawned) if a == [str(claude), "--version"]]
    assert len(versions) == 1, spawned  # the models took the early answer: not asked twice
    assert models[versions[0]] is False  # started before the models' imports, to run beside them
    assert [a for a in spawned if "list-panes" in a] == [a for a in spawned[versions[0]:] if "list-panes" in a]
    opened = ast.literal_eval(lines["OPENED"])
    cli = next(i for i, p in enumerate(opened) if "frontends/__pycache__/cli." in p or p.endswith("frontends/cli.py"))
    assert any(p.startswith(str(homes["claude"] / "sessions")) for p in opened[:cli])  # phase 1 planned the listing
    assert any(p.startswith(str(homes["claude"] / "sessions")) for p in opened[cli:])  # the models did, to compare
