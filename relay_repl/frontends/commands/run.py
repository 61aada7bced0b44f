"""`relay run`: run (or resume) a saved recipe; a notebook on the shelf is handed to `relay notebook run`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_repl.frontends.commands.common import inbox_open, parse_params, stderr_gate


def register(sub: Any) -> None:
    """Add `relay run` to the subparsers."""
    s = sub.add_parser(
        "run",
        help="run a saved recipe (every send planned and gated)",
        description="Run a recipe: NAME (see `relay recipes`) or FILE.toml. Each send shows its plan headed with "
        "where the run stands (recipe, run id, round, step) and asks y/N; No stops the run, resumable with "
        "--resume RUN_ID. Hop is reset to 0 at the start of each round, never otherwise.\n\n"
        "examples:\n"
        "  relay run ping -p target=claude:alpha\n"
        "  relay run five-rounds -p a=claude:alpha -p b=codex:beta --dry-run\n"
        "  relay run --resume run-1a2b3c4d\n\n"
        "exit codes: 0 finished, 1 stopped (No, timeout, halt, hop cap, failure), 2 usage error "
        "(bad recipe file, unknown parameter or target)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("recipe", nargs="?", help="a recipe name or a .toml file")
    s.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE", help="set a parameter (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="print every plan the run would show, with its hops; send nothing")
    s.add_argument("--resume", metavar="RUN_ID", help="continue a stopped run; confirmed steps are never sent again")
    s.add_argument("--json", action="store_true", help="print the run (rounds, steps, states, replies) as JSON at the end")
    s.add_argument("--report", metavar="DIR", help="write DIR/report.md with the run's steps and its exchange drawn "
                   "as DIR/exchange.svg (a sequence diagram, embedded in the report)")
    s.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session

    if bool(args.recipe) == bool(args.resume):
        raise UsageError("name a recipe (relay run NAME) or a run to resume (relay run --resume RUN_ID), not both")
    if args.resume and (args.param or args.dry_run):
        raise UsageError("--resume takes no -p or --dry-run: a run resumes with the parameters it started with")
    params = parse_params(args.param)
    say = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else (lambda s: print(s, flush=True))

    approve = stderr_gate(say) if args.json else None  # stdout carries only the run's JSON
    # a plain pre-plan printed the run's first plan already (issue 40): a gate that knows its digest, and the
    # run id and first relay id it showed, pinned. Only a new, real run is pre-planned.
    gate, pins = getattr(args, "preshown", None) or (None, None)
    pins = pins if args.recipe and not args.dry_run and not args.resume else None
    if pins is not None and gate is not None and not args.json:
        approve = gate
    pinned = dict(pins or {})

    if args.recipe:
        from relay_repl.session.runs.recipes import find_recipe

        if find_recipe(args.recipe).suffix == ".py":  # a notebook on the same shelf: the notebook runner runs it
            from relay_repl.frontends.commands.notebook import cmd_notebook_run  # not on a TOML recipe's path

            args.file, args.resume = str(find_recipe(args.recipe)), None
            return cmd_notebook_run(args)

    if args.recipe:  # a bad file or parameter is refused before the session (and its ledger) exists
        from relay_repl.core.recipe import parse_recipe
        from relay_repl.session.runs.recipes import find_recipe, read_source

        path = find_recipe(args.recipe)
        parse_recipe(read_source(path), str(path)).resolve_params(params)

    async def go():
        from relay_repl.store.ledger import Ledger

        # a dry run sends nothing, so it only reads the ledger: no RELAY_HOME, no ledger file made
        ledger = Ledger.read_only_default() if args.dry_run else None
        session = make_session(fake=args.fake, echo=say, approve=approve, ledger=ledger)
        async with inbox_open(session, say, listen=not args.dry_run):
            if args.resume:
                return await session.resume(args.resume)
            from relay_repl.session.runs.recipes import run_recipe

            return await run_recipe(session, args.recipe, params, dry_run=args.dry_run, echo=say,
                                    run_id=pinned.get("run_id"), first_relay_id=pinned.get("relay_id"),
                                    listing=pinned.get("listing"))

    run = anyio.run(go)
    if args.report and not args.dry_run:
        from pathlib import Path

        from relay_repl.session.runs.exchange_report import write_run_report
        from relay_repl.store.ledger import Ledger

        led = Ledger.read_only_default()
        try:
            report = write_run_report(led, run, Path(args.report))
        finally:
            led.close()
        print(f"relay: report written to {report} (the exchange drawn in {report.parent / 'exchange.svg'})",
              file=sys.stderr)
    if args.json:
        print(run.model_dump_json(indent=1))
    else:
        print(repr(run))
    return 0 if run.state in ("done", "planned") else 1
