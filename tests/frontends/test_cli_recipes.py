"""`relay recipes`, `relay recipes schema`, `relay run` (errors, dry run, a run), `relay why RUN_ID`,
as a new user runs them: a real `relay` process, one line on stderr for every mistake."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RELAY = [sys.executable, "-m", "relay_repl.frontends.cli"]
ROOT = Path(__file__).resolve().parents[2]


def relay(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RELAY, *args], capture_output=True, text=True, cwd=cwd or ROOT, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_recipes_lists_the_four_with_descriptions_and_parameters():
    r = relay("recipes")
    assert r.returncode == 0, r.stderr
    for name in ("ping", "review", "five-rounds", "ask-all"):
        assert any(line.startswith(name + " ") for line in r.stdout.splitlines()), r.stdout
    assert "-p target=<target> (required)" in r.stdout
    listed = json.loads(relay("recipes", "--json").stdout)
    assert {x["name"] for x in listed} >= {"ping", "review", "five-rounds", "ask-all"}


def test_recipes_schema_is_valid_json_schema():
    import jsonschema

    r = relay("recipes", "schema")
    assert r.returncode == 0
    schema = json.loads(r.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "steps" in schema["properties"]


BAD = {
    "malformed": ('name = "x"\nsteps = [ { kind = "ask", to = "claude:alpha" ', "not valid TOML"),
    "unknown-reply": ('name = "x"\n[[steps]]\nkind = "ask"\nto = "fake:inbox"\nbody = "{reply.nobody}"\n',
                      "{reply.nobody}, an unknown reply"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_recipe_file_is_one_line_and_exit_2(tmp_path, case):
    text, needle = BAD[case]
    f = tmp_path / "x.toml"
    f.write_text(text)
    r = relay("--fake", "run", str(f))
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and str(f) in lines[0], r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_unknown_parameter_and_unknown_target_are_one_line_and_exit_2():
    r = relay("--fake", "run", "ping", "-p", "target=fake:inbox", "-p", "colour=red")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no parameter colour" in r.stderr
    r = relay("--fake", "run", "ping", "-p", "target=fake:nobody", "--dry-run")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no target fake:nobody" in r.stderr
    r = relay("run", "no-such-recipe")
    assert r.returncode == 2 and "no recipe named 'no-such-recipe'" in r.stderr


def test_dry_run_prints_every_plan_and_sends_nothing(relay_home):
    """A dry run is read-only: it makes no RELAY_HOME, no ledger, no inbox (it used to make the ledger)."""
    assert not relay_home.exists()
    r = relay("--fake", "run", "ping", "-p", "target=fake:inbox", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "recipe ping, run run-" in r.stdout and ", round 1/1, step 1: tell fake:inbox" in r.stdout
    assert "hop=0 want=ack" in r.stdout
    assert not relay_home.exists()
    r = relay("run", "ping", "--dry-run")  # a missing parameter is refused before anything is made
    assert r.returncode == 2 and "needs -p target=" in r.stderr and not relay_home.exists()


def test_run_without_a_terminal_is_withheld_and_why_shows_the_run(relay_home):
    r = relay("--fake", "run", "ping", "-p", "target=fake:inbox")
    assert r.returncode == 1
    assert "No terminal to ask on" in r.stdout and "withheld" in r.stdout
    run_id = next(w for w in r.stdout.split() if w.startswith("run-"))
    why = relay("why", run_id.rstrip(","))
    assert why.returncode == 0
    kinds = [line.split()[3] for line in why.stdout.splitlines()]
    assert kinds[0] == "run-start" and "plan" in kinds and "answer" in kinds and kinds[-1] == "run-end"
    resumed = relay("--fake", "run", "--resume", run_id.rstrip(","))
    assert resumed.returncode == 1 and "withheld" in resumed.stdout


def test_json_stdout_is_only_json(relay_home):
    r = relay("--fake", "run", "ping", "-p", "target=fake:inbox", "--json")
    assert r.returncode == 1
    run = json.loads(r.stdout)  # the whole stdout is one JSON document
    assert run["state"] == "withheld" and run["steps"][0]["state"] == "withheld"
    assert "Plan: send to fake:inbox" in r.stderr and "No terminal to ask on" in r.stderr
    r = relay("--fake", "run", "ping", "-p", "target=fake:inbox", "--json", "--dry-run")
    assert r.returncode == 0 and json.loads(r.stdout)["state"] == "planned" and "3 payload" in r.stderr
