"""`relay run NAME -p KEY=VALUE`: the run's first plan on screen before pydantic, the models after it (issue 40).

Why: a run's first plan is waited for from the command's start like a send's (goal <= 200 ms,
bench/oneliners.py), and a bare run of a recipe whose only parameter is its target (`relay run ping
-p target=codex:beta`) plans exactly one send first: the first step's, to that target. Every part of
that plan is read plainly by what `relay send`'s pre-plan already reads (frontends/send_plain.py: the
target, the ledger's checks, the kind's plan parts, the printing), plus the recipe (its file found as
`find_recipe` finds it: store/recipe_places.py; its bare shape read by core/recipe_plain.py), the run
id and the step's heading (core/run_words.py, which the runner calls), and the reply route the step's
`want` asks for (the kind's `reply_route` in its `plain_plan` module, over core/reply_words.py, which the
models' routes call).

Phase 1 (standard library only; tests/frontends/test_run_plain.py pins the modules) draws the run id,
takes the first relay id and prints the plan. Phase 2 is today's `cmd_run` with the run id, the first
relay id and a `PreShownGate` holding phase 1's digest (frontends/commands/run.py): the runner records
the run under that id, sends the first step with that relay id, and the gate prints nothing again when
the models' first plan has that digest (else it says the plan changed and shows the new one: nothing
is approved that was not on screen).

Taken only for exactly `run NAME -p KEY=VALUE` (NAME a bare recipe name, no option), the recipe file a
regular TOML recipe in the bare shape, the target `prefix:name` on this host, a kind whose `plain_plan`
module names the reply route plainly (Codex, Gemini CLI), and everything `relay send`'s pre-plan
requires. Anything else (None anywhere) runs the command as before, so every refusal is today's code.

Claude Code names no plain reply route: a run whose steps wait for a Claude session's answer lists the
operator's inbox as a Claude peer first (Runner._reply_route → register_inbox), so that listing's plan
is the run's first. Its module's `inbox_listing_plan` gives it plainly (agents/claude_code/peer_record.py,
the home `ClaudePeerRegistration` builds it from), after `aim` has checked the target as for a send: phase 1
prints the runner's line and that plan, and hands the models the run id, the digest and what it drew for
the record (sessionId, the time, a socket name's suffix): `listing = {"said": True, "pins": ...}`, pinned
through cmd_run → run_recipe → Runner → register_inbox → inbox_listing. The runner then says nothing
again, the gate does not reprint a plan with that digest, and the step's own plan is shown and asked as
always (PreShownGate compares the first plan only).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from relay_repl.frontends import send_plain


class RunPlan:
    """What phase 1 left for phase 2: the run id and relay id it took (None: none), the digest and
    fields of the plan it printed (None: it printed nothing), and for a run whose first plan is the inbox
    listing's (Claude), what it showed of it: {"said": True, "pins": the record's values drawn}."""

    __slots__ = ("run_id", "relay_id", "digest", "fields", "listing")

    def __init__(self, run_id: str | None = None, pre: send_plain.Preplan | None = None,
                 listing: dict[str, Any] | None = None) -> None:
        self.run_id = run_id
        self.relay_id = pre.relay_id if pre is not None else None
        self.digest = pre.digest if pre is not None else None
        self.fields = pre.fields if pre is not None else None
        self.listing = listing


def shape(words: list[str]) -> tuple[str, str, str] | None:
    """(recipe name, key, value) of `run NAME -p KEY=VALUE` in its bare shape, else None."""
    from relay_repl.core.recipe_plain import NAME

    if len(words) != 4 or words[0] != "run" or words[2] != "-p":
        return None
    name, item = words[1], words[3]
    if not NAME.fullmatch(name) or item.startswith("-"):
        return None
    key, eq, value = item.partition("=")  # as parse_params splits it
    if not eq or not key.strip():
        return None
    return name, key.strip(), value


def run(words: list[str]) -> int | None:
    """`relay run` of `words` through the plain pre-plan, or None when its shape is not the bare one or
    nothing was taken (the caller then runs the CLI as always)."""
    got = shape(words)
    if got is None:
        return None
    pre = preplan(*got, dict(os.environ))
    if pre.run_id is None:  # nothing taken, nothing printed: the CLI as always
        return None
    from relay_repl.frontends.cli import main as cli_main

    gate = None
    if pre.digest is not None:
        from relay_repl.session.core.preshown_gate import PreShownGate

        gate = PreShownGate(pre.digest)
    pins: dict[str, Any] = {"run_id": pre.run_id, "relay_id": pre.relay_id}
    if pre.listing is not None:
        pins["listing"] = pre.listing
    return cli_main(extra={"preshown": (gate, pins)})


def preplan(name: str, key: str, value: str, env: dict[str, str], out: Any = None) -> RunPlan:
    """Phase 1: print the first plan of `relay run name -p key=value` and return its ids and digest, or
    return what the models need to plan it themselves (ids already taken are theirs to use)."""
    try:
        return _preplan(name, key, value, env, out or sys.stdout)
    except Exception:  # noqa: BLE001 - a plain reader's surprise is the models' case: they name it
        return RunPlan()


def first_run(name: str, key: str, value: str) -> Any:
    """The recipe `name` in its bare shape with `key=value` given (core/recipe_plain.PlainRun), or None."""
    import tomllib

    from relay_repl.core.errors import FileProblem
    from relay_repl.core.recipe_plain import bare_run
    from relay_repl.store.loader import read_text
    from relay_repl.store.recipe_places import plain_toml

    path = plain_toml(name)
    if path is None:
        return None
    try:  # the one loader, as read_source reads it (its refusal is the models' to word)
        text = read_text(path, "the models word it")
    except FileProblem:
        return None
    if not text:
        return None
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None
    return bare_run(data, {key: value})


def _first_kind() -> str | None:
    """The first registered kind in name order (agents/registry.kind_names), or None."""
    from relay_repl.system.entry_points import scan_entry_points

    return min((ep.name for ep in scan_entry_points(send_plain.KINDS)), default=None)


def _listing_first(plan: Any, run_id: str, env: dict[str, str], out: Any) -> RunPlan:
    """A run whose first plan is the inbox listing's (Runner._reply_route → register_inbox): the runner's line
    and that plan printed, as the runner says it and the gate shows it, with the values drawn for it pinned
    for the models; or nothing printed (None from the kind: the models list it, or say why not)."""
    got = plan(dict(env))
    if got is None:
        return RunPlan()
    label, parts, pins = got
    from relay_repl.core import run_words
    from relay_repl.core.controls import visible
    from relay_repl.core.plan_text import fields_digest, plan_fields, render_plan

    fields = plan_fields(**parts)
    print(visible(run_words.listing_first(label), keep_newlines=True), file=out, flush=True)  # the runner's safe_echo
    print(render_plan(fields), file=out, flush=True)  # the gate's show: Plan.render
    return RunPlan(run_id, send_plain.Preplan(None, fields_digest(fields), fields), {"said": True, "pins": pins})


def _preplan(name: str, key: str, value: str, env: dict[str, str], out: Any) -> RunPlan:
    plain = first_run(name, key, value)
    if plain is None:
        return RunPlan()
    target = send_plain.shape(["send", plain.target, "x"])  # `prefix:name`, not a host's, not a pane
    if target is None:
        return RunPlan()
    _, prefix, tname = target
    kind_route = listing_first = None
    if plain.waits:  # asked before anything is read: a kind that names no route plainly is the models'
        named = send_plain.kind_named(prefix)
        hook = send_plain.kind_hook(named[0]) if named else None
        kind_route = send_plain.hook_module(hook, "reply_route")
        if kind_route is None:  # the kind names its route only through the models (Claude: the inbox is listed first)
            soon = send_plain.hook_module(hook, "reply_route_soon")
            if soon is not None:  # what that route asks first, started to run beside the imports below
                soon(dict(env))
            listing_first = send_plain.hook_module(hook, "inbox_listing_plan")
            if listing_first is None or named is None or named[0] != _first_kind():
                return RunPlan()  # register_inbox lists the inbox for the first kind in name order that lists peers
    from relay_repl.core import run_words

    run_id = run_words.new_run_id()
    body = plain.first_body(run_id)
    at = send_plain.aim(prefix, tname, body, env)
    if at is None:
        return RunPlan()
    if listing_first is not None:
        return _listing_first(listing_first, run_id, env, out)
    route = None
    if kind_route is not None:
        from relay_repl.store.paths import inbox_socket

        inbox = str(inbox_socket(os.getpid(), create=False))  # the inbox `relay run` opens before its first plan

        def route(row: Any, relay_id: str) -> str | None:
            return kind_route(row, dict(env), relay_id, inbox)

    heading = run_words.step_heading(plain.name, run_id, 1, plain.rounds, 1, plain.kind, at.row.spec)
    pre = send_plain.show(at, body, env, out, want=plain.want, heading=heading, route=route)
    return RunPlan(run_id if pre.relay_id is not None else None, pre)
