"""A recipe in the bare shape `relay run` is most often given, read with the standard library (issue 40).

Why: a plain pre-plan of `relay run RECIPE -p target=KIND:NAME` (its first plan printed before
pydantic and the event loop load, as `relay send`'s is) needs the recipe's name, rounds and first
step. core/recipe.py's models are the rules; this reader accepts only a shape whose every rule it
can check plainly, and answers None for anything else (the models then read the file and accept it
or refuse it in their own words). So it never accepts a file the models refuse, and what it accepts
it reads as they do (tests/core/test_recipe_plain.py holds both over the shipped recipes and variants).

The bare shape: keys among name, description, rounds, params, steps (no until); exactly one
parameter, of type target, given on the command line and nowhere else; every step an ask or a tell
to that parameter, with a body naming only it, `{round}`, `{rounds}` and `{run}`, and no `name` or
`transport`. Standard library only.
"""

from __future__ import annotations

import re
from typing import Any

from relay_repl.core.recipe_text import BUILTINS, render, template_names

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_PARAM_REF = re.compile(r"\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}")
_TOP = {"name", "description", "rounds", "params", "steps"}
_STEP = {"kind", "to", "body", "want", "timeout"}
_PLAIN_NAMES = {"round", "rounds", "run"}


class PlainRun:
    """What the first plan of a bare run needs: the recipe's name and rounds, the target given, and the
    first step (its kind, want, body template and timeout), and whether any step waits for an answer
    (`Step.waits_for_answer`: the runner lists the inbox first for a kind that answers only a listed peer)."""

    __slots__ = ("name", "rounds", "param", "target", "kind", "want", "body", "timeout", "steps", "waits")
    name: str
    rounds: int
    param: str
    target: str
    kind: str
    want: str
    body: str
    timeout: float
    steps: int
    waits: bool

    def __init__(self, **kw: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kw[k])

    def first_body(self, run_id: str) -> str:
        """The first step's body as the runner fills it in round 1 (`Runner._values`)."""
        return render(self.body, {self.param: self.target, "round": "1", "rounds": str(self.rounds), "run": run_id})


def _str(v: Any) -> bool:
    return type(v) is str


def bare_run(data: Any, given: dict[str, str]) -> PlainRun | None:
    """The bare run of a recipe file's parsed TOML `data` with the parameters `given`, or None."""
    if not isinstance(data, dict) or set(data) - _TOP or not {"name", "steps"} <= set(data):
        return None
    name, rounds = data["name"], data.get("rounds", 1)
    if not (_str(name) and NAME.match(name)) or not _str(data.get("description", "")):
        return None
    if type(rounds) is not int or not 1 <= rounds <= 100:
        return None
    params = data.get("params")
    if not isinstance(params, dict) or len(params) != 1:
        return None
    (param, spec), = params.items()
    if not NAME.match(param) or param in BUILTINS or param == "reply" or not isinstance(spec, dict):
        return None
    if set(spec) - {"type", "description"} or spec.get("type") != "target" or not _str(spec.get("description", "")):
        return None  # a default is another place the value could come from: the models' case
    if set(given) != {param}:
        return None
    target = given[param]
    if not _str(target) or "\n" in target or "\r" in target or (":" not in target and not target.startswith("%")):
        return None
    steps = data["steps"]
    if not isinstance(steps, list) or not steps:
        return None
    first: dict[str, Any] | None = None
    waits = False
    for step in steps:
        read = _step(step, param)
        if read is None:
            return None
        first = first or read
        waits = waits or read["want"] != "none"  # ask: reply; tell: ack (forward is not a bare step)
    assert first is not None
    return PlainRun(name=name, rounds=rounds, param=param, target=target, steps=len(steps), waits=waits, **first)


def _step(step: Any, param: str) -> dict[str, Any] | None:
    if not isinstance(step, dict) or set(step) - _STEP or not {"kind", "to", "body"} <= set(step):
        return None
    kind, to, body, want = step["kind"], step["to"], step["body"], step.get("want")
    if kind not in ("ask", "tell") or not (_str(to) and _str(body) and body):
        return None
    m = _PARAM_REF.fullmatch(to.strip())
    if m is None or m.group(1) != param:
        return None
    if kind == "ask" and want not in (None, "reply"):
        return None
    if kind == "tell" and want not in (None, "ack", "none"):
        return None
    timeout = step.get("timeout", 120.0)
    if type(timeout) not in (int, float) or not 0 < timeout <= 3600:
        return None
    try:
        names = template_names(body)
    except ValueError:
        return None
    if any(n not in _PLAIN_NAMES and n != param for n in names):
        return None
    return {"kind": kind, "want": "reply" if kind == "ask" else (want or "none"), "body": body,
            "timeout": float(timeout)}
