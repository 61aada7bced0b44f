"""Helpers more than one `relay` command uses (imports deferred: `relay --help` stays fast)."""

from __future__ import annotations

import sys
from typing import Any

from relay_repl.core.controls import visible


def progress(line: str) -> None:
    """Progress goes to stderr, always: stdout is the command's answer (`--json` stays JSON)."""
    print(line, file=sys.stderr, flush=True)


def closed_pipe() -> int:
    """The reader of our output went away (`relay targets --json | head`): stop quietly, as a
    command killed by SIGPIPE does (exit 141), instead of a BrokenPipeError traceback. stdout is
    pointed at /dev/null first, so the interpreter's final flush has nowhere to fail."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return 141


def parse_params(items: list[str]) -> dict[str, str]:
    """`-p KEY=VALUE` flags as a dict (typed later, by the recipe or the notebook)."""
    from relay_repl.core.errors import UsageError

    params: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"-p {item!r} must be KEY=VALUE")
        params[key.strip()] = value
    return params


def stderr_gate(say: Any) -> Any:
    """The terminal gate with its plans and y/N prompt on stderr, so stdout can carry JSON only."""
    from relay_repl.session.core.gate import TerminalGate

    io: dict = {}
    if sys.stdin.isatty() and sys.stderr.isatty():
        from prompt_toolkit.output import create_output

        io["output"] = create_output(stdout=sys.stderr)
    return TerminalGate(write=say, isatty=lambda: sys.stdin.isatty() and sys.stderr.isatty(), **io)


def inbox_open(session: Any, echo: Any, *, listen: bool = True) -> Any:
    """`async with inbox_open(session, say):` the session's inbox listening for the block (replies need
    somewhere to go; `listen=False` for a dry run, which opens nothing), closed after it even when cancelled."""
    from contextlib import asynccontextmanager

    import anyio

    @asynccontextmanager
    async def opened() -> Any:
        async with anyio.create_task_group() as tg:
            if listen:
                await session.open_inbox(tg, echo=echo, serve_requests=False)  # a one-shot waits for its answer only
            try:
                yield
            finally:
                await session.close_inbox()
                tg.cancel_scope.cancel()

    return opened()


def _event_text(e) -> str:
    d = e.data
    if e.kind == "run-start":
        return f"recipe {d.get('recipe')} params {d.get('params')}"
    if e.kind == "run-step":
        return f"round {d.get('round')} step {d.get('step')}: {d.get('kind')} {d.get('target')} as {d.get('relay_id')} hop {d.get('hop')}"
    if e.kind == "run-answer":
        a = d.get("answer") or {}
        return f"round {d.get('round')} step {d.get('step')}: {a.get('relay_id')} (hop {a.get('hop')}) answers {d.get('answers')}: {a.get('body')}"
    if e.kind == "host-claim":  # what a host reported that the operator did not approve, and that it was not believed
        return str(d.get("line") or d.get("claim"))
    if e.kind == "remote-approval":
        return f"approved on {d.get('host')}: {d.get('target')} via {d.get('transport')}, digest {str(d.get('digest'))[:12]}"
    if e.kind == "run-end":
        return f"{d.get('state')}" + (f": {d.get('reason')}" if d.get("reason") else "")
    return str(d.get("detail") or d.get("state") or d.get("approved", ""))


def print_events(events: list, as_json: bool) -> None:
    """The events as a table, or one JSON object each. Every command's JSON is ASCII (ensure_ascii):
    json escapes only C0 controls, so a peer's C1 control or bidi override would reach a terminal raw."""
    import json
    import time

    for e in events:
        if as_json:
            print(json.dumps(e.model_dump(), ensure_ascii=True))
        else:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.at))
            data = _event_text(e)
            print(visible(f"{e.seq:>6} {when} {e.kind:<16} {e.relay_id or '-':<28} {data}"))  # data may be a peer's
