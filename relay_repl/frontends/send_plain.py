"""`relay send KIND:NAME MESSAGE`: the plan on screen before pydantic, the models after it (issue 40).

Why: a send's plan is waited for from the command's start (goal <= 200 ms, bench/oneliners.py), and
most of what ran before it was importing pydantic, anyio and asyncio and building ~22 models. The
plan's every part can be read plainly: the kind's plain listing (the same rows `relay targets`
prints), the operator's own address (whoami's rules), the ledger's halts, open sends and id counter
(its own statements), the envelope line (`core.envelope_line.plain_line`), and the kind's part of the
plan from its `plain_plan` hook. So:

Phase 1 (standard library only; tests/frontends/test_send_plain.py pins the modules) prints the
plan at once, bytes and digest equal to the models' (`core.plan_text`).

Phase 2 runs today's command unchanged (cli.main → `cmd_send`), with two things pinned: the relay id
phase 1 took (`SendOptions.relay_id`: the id shown is the id sent) and the gate, a
`PreShownGate` holding phase 1's digest. The models build their own plan; when its digest is the
one shown, it is not printed again and `Proceed? [y/N]` is asked about it; when it differs (the
target turned busy meanwhile, a plain reader was wrong) the new plan is printed under one line
saying so, and that is the plan asked about. Nothing is approved that was not on screen.

Taken only for the bare shape: exactly `send TARGET MESSAGE` (no option; TARGET `prefix:name`, not
a host's, not a pane), MESSAGE not an envelope line and plainly printable, no hosts.toml, the
ledger file there, no halt in force, no send left open by a dead process, one live row named so in
the kind's plain listing, and every reader answering exactly. Anything else (None anywhere) runs
the command as before, so every refusal is today's code and bytes.

The contract a kind plugs in with (`relay_repl/agents/<kind>/plain_plan.py`, entry-point group
`relay_repl.plain_plan`, `plan_parts(row, env, send) -> dict | None`): see `PARTS` below and
agents/claude_code/plain_plan.py. A kind whose module also defines `reply_route(row, env, relay_id,
inbox) -> str | None` (the plan's "reply via" for a send that asks for an answer) has the first plan
of a bare `relay run` planned plainly too (frontends/run_plain.py, which calls `aim` and `show` here).
A kind that names no such route may define `reply_route_soon(env) -> None`: what the models' route
asks first, started before anything else is read (Claude Code: its `--version`, for the listing), and
`inbox_listing_plan(env) -> (label, plan fields, pins) | None`: the run's first plan when the runner lists
the operator's inbox as the kind's peer first (Claude Code; run_plain prints it and pins what it drew).
"""

from __future__ import annotations

import os
import sys
from typing import Any

GROUP = "relay_repl.plain_plan"
LISTINGS = "relay_repl.plain_listing"
KINDS = "relay_repl.agents"

PARTS: dict[str, Any] = {"transport": str, "fallback": str, "choice_notes": tuple, "payload": str, "delivered_when": str,
         "now": (str, type(None)), "notes": tuple, "files": tuple}
"""What a kind's `plan_parts` returns, and each part's type (missing tuples and `now` count as empty)."""

_OPTIONAL = {"choice_notes": (), "now": None, "notes": (), "files": ()}


class PlainSend:
    """What a kind's `plan_parts` is told about the send (see the contract above)."""

    __slots__ = ("line", "relay_id", "sender", "pid", "inbox_open", "interrupt", "choose")

    def __init__(self, **kw: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kw[k])


class Preplan:
    """What phase 1 left for phase 2: the relay id it took (None if none), and the digest of the
    plan it printed (None when it printed nothing: the models then plan and ask as always)."""

    __slots__ = ("relay_id", "digest", "fields")

    def __init__(self, relay_id: str | None = None, digest: str | None = None,
                 fields: dict[str, Any] | None = None) -> None:
        self.relay_id, self.digest, self.fields = relay_id, digest, fields


def shape(words: list[str]) -> tuple[str, str, str] | None:
    """(target, prefix, name) of `send TARGET MESSAGE` in its bare shape, else None."""
    if len(words) != 3 or words[0] != "send":
        return None
    target, message = words[1], words[2]
    if target.startswith("-") or message.startswith("-") or target != target.strip():
        return None
    prefix, sep, name = target.partition(":")
    if not (sep and prefix and name) or "/" in prefix or target.startswith("%"):
        return None
    if message.startswith("[relay/"):  # an envelope line (or one `Envelope.parse` refuses): a forward
        return None
    return target, prefix, name


def run(words: list[str]) -> int | None:
    """`relay send` of `words` through the plain pre-plan, or None when its shape is not the bare one
    (the caller then runs the CLI as always)."""
    got = shape(words)
    if got is None:
        return None
    pre = preplan(got[1], got[2], words[2], dict(os.environ))
    if pre.relay_id is None:
        return None
    from relay_repl.frontends.cli import main as cli_main

    gate = None
    if pre.digest is not None:
        from relay_repl.session.core.preshown_gate import PreShownGate

        gate = PreShownGate(pre.digest)
    return cli_main(extra={"preshown": (gate, pre.relay_id)})


def _by_file(name: str, ref: str | None, group: str) -> Any:
    from relay_repl.system.prefetch import load_by_file

    if ref is None:
        return None
    module, _, attr = ref.partition(":")
    mod = load_by_file(name, module.strip(), group)
    return getattr(mod, attr.strip(), None) if mod is not None and attr.strip() else None


def _facts() -> Any:
    from relay_repl.system.prefetch import load_by_file

    return load_by_file("plain-facts", "relay_repl.agents.plain_facts", LISTINGS)


def kind_named(prefix: str) -> tuple[str, dict[str, Any]] | None:
    """The registered kind `prefix` names and its adapter, asked as finder._kinds_named asks (those whose
    name starts with it first), or None (then the models name it, or refuse the prefix)."""
    from relay_repl.system.entry_points import scan_entry_points

    facts = _facts()
    if facts is None:
        return None
    for kind in sorted({ep.name for ep in scan_entry_points(KINDS)}, key=lambda n: (not n.startswith(prefix), n)):
        adapter = facts.adapter(kind)
        if adapter is None:
            return None  # the models read it (or refuse it), in their order
        if prefix in (adapter["prefix"], kind):
            return kind, adapter
    return None


def preplan(prefix: str, name: str, body: str, env: dict[str, str], out: Any = None) -> Preplan:
    """Phase 1: print the plan of `relay send prefix:name body` and return its id and digest, or
    return what the models need to plan it themselves (an id already taken is theirs to use)."""
    try:
        return _preplan(prefix, name, body, env, out or sys.stdout)
    except Exception:  # noqa: BLE001 - a plain reader's surprise is the models' case: they name it
        return Preplan()


class Aim:
    """A send's target as phase 1 found it (`aim`): its kind and adapter, its one live row, the kind's
    hook, the operator's own address, the ledger's path and the plan's notes on earlier sends of the body."""

    __slots__ = ("kind", "adapter", "row", "hook", "me", "ledger", "earlier")
    kind: str
    adapter: dict[str, Any]
    row: Any
    hook: Any
    me: Any
    ledger: str
    earlier: tuple[str, ...]

    def __init__(self, **kw: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kw[k])


def _preplan(prefix: str, name: str, body: str, env: dict[str, str], out: Any) -> Preplan:
    found = aim(prefix, name, body, env)
    return Preplan() if found is None else show(found, body, env, out)


def aim(prefix: str, name: str, body: str, env: dict[str, str]) -> Aim | None:
    """What a send of `body` to `prefix:name` is aimed at, read plainly, or None (the models' case): the
    body plainly valid, no hosts.toml, the ledger there with no halt and no send left open by a dead
    process, one live row named so in the kind's plain listing, the kind's hook loaded. Takes no id."""
    import sqlite3

    from relay_repl.core.envelope_line import MAX_BODY

    if not (1 <= len(body) <= MAX_BODY and body.isprintable()):
        return None  # check_body / Envelope.make say what is wrong with it
    from relay_repl.store import hosts_path, paths

    if os.path.lexists(hosts_path.hosts_file()):
        return None
    ledger = str(paths.ledger_path())
    try:
        st = os.stat(ledger)
    except OSError:
        return None  # the Ledger creates it (or says why it cannot)
    import stat

    if not stat.S_ISREG(st.st_mode) or st.st_size == 0 or not os.access(ledger, os.R_OK | os.W_OK):
        return None
    named = kind_named(prefix)
    if named is None:
        return None
    kind, adapter = named
    from relay_repl.system.entry_points import scan_entry_points

    listing = _by_file(kind, {ep.name: ep.value for ep in scan_entry_points(LISTINGS)}.get(kind), LISTINGS)
    hook = kind_hook(kind)
    if listing is None or hook is None:
        return None
    from relay_repl.system.pane_list import PlainRoster

    # a kind's hook module may list its rows itself (the very listing, with what it looked at kept for
    # plan_parts: Gemini's one capture serves both the listing and preflight's look)
    rows = (hook_module(hook, "listing") or listing)(env, PlainRoster(env))
    if rows is None:
        return None
    live = [r for r in rows if (r.name == name or r.address == name) and r.live]
    if len(live) != 1:
        return None  # unknown, ambiguous, stale, dormant: the models' words
    row = live[0]
    from relay_repl.session.core.whoami import by_rules

    me = by_rules(env)
    if me is None:
        return None
    from relay_repl.session.core.unfinished_rule import open_orphans, plain_earlier_notes
    from relay_repl.store.sqlite_read import connect_read_only

    con = connect_read_only(ledger)
    try:
        if con.execute("SELECT 1 FROM halts WHERE cleared IS NULL LIMIT 1").fetchall():
            return None  # the models refuse, in their words
        if open_orphans(con) is not False:
            return None  # make_session sweeps and says so before the plan
        earlier = tuple(plain_earlier_notes(con, row.spec, body))
    except (sqlite3.Error, ValueError):
        return None
    finally:
        con.close()
    return Aim(kind=kind, adapter=adapter, row=row, hook=hook, me=me, ledger=ledger, earlier=earlier)


def kind_hook(kind: str) -> Any:
    """The `plan_parts` hook the kind `kind` declares (loaded by file, once), or None."""
    from relay_repl.system.entry_points import scan_entry_points

    return _by_file(kind, {ep.name: ep.value for ep in scan_entry_points(GROUP)}.get(kind), GROUP)


def hook_module(hook: Any, attr: str) -> Any:
    """Another function of the module a kind's `plan_parts` hook is in (None when it defines none)."""
    return getattr(sys.modules.get(getattr(hook, "__module__", "")), attr, None)


def reply_route_soon(target: str, env: dict[str, str]) -> None:
    """Start what the reply route of a send to `target` asks first: the kind's `reply_route_soon` hook (Claude
    Code: its `--version`, which listing the operator's inbox as a peer asks). `relay serve --stdio` calls it
    when a channel's first send that waits for an answer arrives, before its session is made (issue 33), so
    the process runs beside session.app's imports. It decides nothing: the models take the process only for
    the very question they ask. A target these readers do not name (a pane, a host's, an unknown prefix)
    starts nothing."""
    got = shape(["send", target, "x"])
    named = kind_named(got[1]) if got is not None else None
    soon = hook_module(kind_hook(named[0]), "reply_route_soon") if named is not None else None
    if soon is not None:
        soon(dict(env))


RouteFn = Any
"""`(row, relay_id) -> str | None`: the plan's reply route for a send that asks for an answer (None:
not read plainly, the models plan it)."""


def show(at: Aim, body: str, env: dict[str, str], out: Any, *, want: str = "none", heading: str | None = None,
         route: RouteFn = None) -> Preplan:
    """Take the send's relay id, ask the kind's hook for its parts and print the plan of sending `body`
    (with `want`, under `heading`, naming the reply route `route` gives): the Preplan phase 2 needs."""
    import sqlite3

    from relay_repl.core.envelope_line import plain_line
    from relay_repl.store.ledger_ids import take_id_at

    row, me = at.row, at.me
    try:
        rid = take_id_at(at.ledger, me.address)
    except sqlite3.Error:
        return Preplan()
    line = plain_line(sender=me.sender, to="peer", id=rid, hop=0, want=want, re=None, body=body)
    if line is None:
        return Preplan(rid)
    reply_route = None
    if want != "none":
        reply_route = route(row, rid) if route is not None else None
        if not isinstance(reply_route, str) or not reply_route:
            return Preplan(rid)
    facts = _facts()
    choice = _by_file("plain-choice", "relay_repl.agents.plain_choice:chooser", LISTINGS)
    if facts is None or choice is None:
        return Preplan(rid)
    send = PlainSend(line=line, relay_id=rid, sender=me.sender, pid=os.getpid(), inbox_open=True, interrupt=False,
                     choose=choice(at.kind, at.adapter))
    try:
        parts = at.hook(row, dict(env), send)
    except Exception:  # noqa: BLE001 - the kind's own surprise: the models plan it
        return Preplan(rid)
    parts = checked(parts)
    if parts is None:
        return Preplan(rid)
    from relay_repl.core.peertext import provenance_notes
    from relay_repl.core.plan_text import fields_digest, plan_fields, render_plan
    from relay_repl.core.target_row import describe_target

    now = (parts["now"],) if parts["now"] else ()
    fields = plan_fields(action=f"send to {row.spec}", target=describe_target(row), identified_by=row.identified_by,
                         transport=parts["transport"], fallback=parts["fallback"], payload=parts["payload"],
                         delivered_when=parts["delivered_when"],
                         notes=parts["choice_notes"] + at.earlier + provenance_notes(body) + now + parts["notes"],
                         files=parts["files"], relay_id=rid, reply_route=reply_route, heading=heading)
    print(render_plan(fields), file=out, flush=True)
    return Preplan(rid, fields_digest(fields), fields)


def checked(parts: Any) -> dict[str, Any] | None:
    """A kind's parts with the optional ones filled in, or None when any is missing or of another type."""
    if not isinstance(parts, dict) or set(parts) - set(PARTS):
        return None
    out = {**_OPTIONAL, **parts}
    for key, typ in PARTS.items():
        if key not in out or not isinstance(out[key], typ):
            return None
        if typ is tuple and not all(isinstance(x, str) for x in out[key]):
            return None
    return out
