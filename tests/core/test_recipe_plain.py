"""core/recipe_plain.py: the bare recipe shape read with the standard library never accepts what the
models (core/recipe.py) refuse, and what it accepts it reads as they do (issue 40)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from relay_repl.core.recipe import RecipeError, parse_recipe
from relay_repl.core.recipe_plain import bare_run

ROOT = Path(__file__).resolve().parents[2]
PING = (ROOT / "recipes" / "ping.toml").read_text()
RUN = "run-0badc0de"

# each a ping.toml with one thing changed: accepted or not by the plain reader, the models agree
VARIANTS = {
    "ping": PING,
    "two-rounds": PING.replace("rounds = 1", "rounds = 2"),
    "rounds-0": PING.replace("rounds = 1", "rounds = 0"),
    "rounds-float": PING.replace("rounds = 1", "rounds = 1.0"),
    "rounds-101": PING.replace("rounds = 1", "rounds = 101"),
    "no-rounds": PING.replace("rounds = 1\n", ""),
    "ask": PING.replace('kind = "tell"\nwant = "ack"', 'kind = "ask"'),
    "ask-ack": PING.replace('kind = "tell"', 'kind = "ask"'),
    "tell-none": PING.replace('want = "ack"', 'want = "none"'),
    "tell-reply": PING.replace('want = "ack"', 'want = "reply"'),
    "tell-no-want": PING.replace('want = "ack"\n', ""),
    "forward": PING.replace('kind = "tell"', 'kind = "forward"'),
    "unknown-key": PING.replace("rounds = 1", "rounds = 1\ncolour = 'red'"),
    "until": PING.replace("rounds = 1", 'rounds = 1\nuntil = "ok"'),
    "bad-name": PING.replace('name = "ping"', 'name = "p ing"'),
    "name-int": PING.replace('name = "ping"', "name = 3"),
    "default": PING.replace('type = "target"', 'type = "target"\ndefault = "codex:beta"'),
    "text-param": PING.replace('type = "target"', 'type = "text"'),
    "param-run": PING.replace("[params.target]", "[params.run]").replace("{target}", "{run}"),
    "literal-to": PING.replace('to = "{target}"', 'to = "codex:beta"'),
    "to-spaced": PING.replace('to = "{target}"', 'to = "{ target }"'),
    "to-other": PING.replace('to = "{target}"', 'to = "{other}"'),
    "body-last": PING.replace("(run {run})", "(run {run}, {last})"),
    "body-unknown": PING.replace("(run {run})", "(run {run}, {colour})"),
    "body-round": PING.replace("(run {run})", "(run {run}, round {round}/{rounds}, {{x}})"),
    "body-stray": PING.replace("(run {run})", "(run {run}, {)"),
    "body-empty": PING.replace('body = "ping from', 'body = ""\nbodyx = "ping from'),
    "timeout-0": PING.replace("timeout = 60", "timeout = 0"),
    "timeout-3601": PING.replace("timeout = 60", "timeout = 3601"),
    "timeout-float": PING.replace("timeout = 60", "timeout = 2.5"),
    "timeout-str": PING.replace("timeout = 60", 'timeout = "60"'),
    "timeout-nan": PING.replace("timeout = 60", "timeout = nan"),
    "transport": PING.replace("timeout = 60", 'timeout = 60\ntransport = "tmux"'),
    "step-name": PING.replace("timeout = 60", 'timeout = 60\nname = "x"'),
    "two-steps": PING + '\n[[steps]]\nkind = "ask"\nto = "{target}"\nbody = "again {round}"\n',
    "second-bad": PING + '\n[[steps]]\nkind = "ask"\nto = "{target}"\nbody = "again {nope}"\n',
    "no-steps": PING.split("[[steps]]")[0],
}
GIVEN = {
    "claude": {"target": "claude:alpha"},
    "codex": {"target": "codex:beta"},
    "pane": {"target": "%3"},
    "no-colon": {"target": "beta"},
    "newline": {"target": "codex:be\nta"},
    "extra": {"target": "codex:beta", "colour": "red"},
    "missing": {},
}


def _models(text: str, given: dict[str, str]):
    try:
        rec = parse_recipe(text, "x.toml")
        return rec, rec.resolve_params(given)
    except RecipeError:
        return None


@pytest.mark.parametrize("given", sorted(GIVEN))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_what_the_plain_reader_accepts_the_models_accept_and_read_alike(variant, given):
    from relay_repl.core.recipe import render

    text, params = VARIANTS[variant], GIVEN[given]
    plain = bare_run(tomllib.loads(text), params)
    models = _models(text, params)
    if plain is None:
        return  # the models' case: they accept or refuse it in their own words
    assert models is not None, f"the plain reader accepted {variant}/{given}, which the models refuse"
    rec, resolved = models
    step = rec.steps[0]
    assert (plain.name, plain.rounds, plain.steps) == (rec.name, rec.rounds, len(rec.steps))
    assert (plain.kind, plain.want, plain.timeout, plain.target) == (step.kind, step.wants, step.timeout,
                                                                      resolved[step.to_param])
    values = {**resolved, "round": "1", "rounds": str(rec.rounds), "run": RUN, "last": "(no reply yet)"}
    assert plain.first_body(RUN) == render(step.body, values)


def test_the_bare_ping_is_read_plainly():
    """Not a reader that answers None to everything: ping and its plain variants are accepted."""
    for variant in ("ping", "two-rounds", "no-rounds", "ask", "tell-none", "to-spaced", "body-round",
                    "timeout-float", "two-steps"):
        got = bare_run(tomllib.loads(VARIANTS[variant]), {"target": "codex:beta"})
        assert got is not None, variant
    ping = bare_run(tomllib.loads(PING), {"target": "gemini:gamma"})
    assert ping is not None and (ping.kind, ping.want, ping.timeout) == ("tell", "ack", 60.0)
    assert ping.first_body(RUN) == "ping from the relay operator (run run-0badc0de): please acknowledge this id"


def test_the_plain_reader_loads_no_pydantic():
    code = ("import sys, tomllib, relay_repl.core.recipe_plain as p; "
            f"assert p.bare_run(tomllib.loads({PING!r}), {{'target': 'codex:beta'}}) is not None; "
            "print(sorted(m for m in ('pydantic', 'anyio', 'asyncio', 'libtmux') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
