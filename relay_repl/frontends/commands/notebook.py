"""`relay notebook run|show|export`: percent-format notebooks run against the session."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from relay_repl.frontends.commands.common import inbox_open, parse_params, stderr_gate


def register(sub: Any) -> None:
    """Add `relay notebook` to the subparsers."""
    nb = sub.add_parser(
        "notebook",
        help="run a notebook (a .py file of `# %%%%` cells) against the session, outputs kept beside it",
        description="A notebook is a plain Python file in the jupytext percent format (`# %% title` starts a code "
        "cell, `# %% [markdown]` a prose cell). Its cells run top to bottom in one namespace holding `session` and "
        "`anyio`, with top-level await; every send shows its plan and asks y/N, headed with the notebook, run and "
        "cell. Outputs go to <stem>.relay/<run id>/ (cells.jsonl, report.md), never into the file.\n\n"
        "exit codes: 0 every cell ran, 1 a cell raised (later cells not run), 2 a syntax error or a bad -p, "
        "before any cell runs; 130 Ctrl-C (resumable with --resume)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    nsub = nb.add_subparsers(dest="notebook_command", metavar="NBCOMMAND", required=True)
    x = nsub.add_parser("run", help="run a notebook's cells", description="Run a notebook's cells top to bottom.")
    x.add_argument("file", help="the notebook, FILE.py")
    x.add_argument("-p", dest="param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter (the cell tagged parameters holds the defaults; the value is typed by the default)")
    x.add_argument("--dry-run", action="store_true", help="show every send's plan, send nothing")
    x.add_argument("--resume", metavar="RUN", help="continue a stopped run: sends it made are answered from the ledger")
    x.add_argument("--json", action="store_true", help="the run as JSON on stdout (cell output and plans on stderr)")
    x.set_defaults(func=cmd_notebook_run)
    x = nsub.add_parser("show", help="print a run's report (the newest by default)",
                        description="Print the report.md of the newest (or the named) run of a notebook.")
    x.add_argument("file", help="the notebook, FILE.py")
    x.add_argument("run", nargs="?", help="a run id (default: the newest)")
    x.add_argument("--json", action="store_true", help="the run (run.json) instead of the report")
    x.set_defaults(func=cmd_notebook_show)
    x = nsub.add_parser("export", help="write a run as a Jupyter .ipynb (for reading: no kernel is named)",
                        description="Write the cells and a run's outputs (the newest by default) as an nbformat-4 "
                        "notebook, to read in Jupyter, JupyterLab or on a code host. Needs nbformat.")
    x.add_argument("file", help="the notebook, FILE.py")
    x.add_argument("run", nargs="?", help="a run id (default: the newest)")
    x.add_argument("--ipynb", required=True, metavar="OUT.ipynb", help="where to write it")
    x.set_defaults(func=cmd_notebook_export)


def cmd_notebook_run(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session
    from relay_repl.session.runs.notebook import read_notebook, run_notebook

    params = parse_params(args.param)
    if args.resume and args.dry_run:
        raise UsageError("--resume and --dry-run do not mix: a dry run sends nothing, so there is nothing to resume")
    read_notebook(Path(args.file))  # a syntax error is one line before anything else starts
    err = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    say = err if args.json else (lambda s: print(s, flush=True))
    approve = stderr_gate(say) if args.json else None  # stdout carries only the run's JSON

    async def go():
        from relay_repl.store.ledger import Ledger

        # a dry run sends nothing, so it only reads the ledger: no RELAY_HOME, no ledger file made (issue 18, 9)
        ledger = Ledger.read_only_default() if args.dry_run else None
        session = make_session(fake=args.fake, echo=say, approve=approve, ledger=ledger)
        async with inbox_open(session, say, listen=not args.dry_run):
            return await run_notebook(session, args.file, params, dry_run=args.dry_run, resume=args.resume,
                                      say=say, progress=err, out=sys.stderr if args.json else None,
                                      keep_echo=not args.json)  # progress on stdout is shown with the cells' prints

    run = anyio.run(go)
    if args.json:
        print(run.model_dump_json(indent=1))
    else:
        where = Path(args.file).with_name(Path(args.file).stem + ".relay") / run.id
        print(f"notebook {run.notebook} run {run.id}: {run.state}" + (f" ({run.reason})" if run.reason else "")
              + f"; report: {where / 'report.md'}")
    return run.exit_code


def cmd_notebook_show(args: argparse.Namespace) -> int:
    import json

    from relay_repl.core.controls import visible
    from relay_repl.session.runs.notebook import load_run, render_report

    run, _where = load_run(Path(args.file), args.run)
    if args.json:  # ASCII JSON: a C1 control or a bidi override in a (hand-edited) file is escaped, not printed
        print(json.dumps(run.model_dump(mode="json"), ensure_ascii=True, indent=1))
    else:  # rendered from run.json, every character shown inert (report.md may have been edited or cut short)
        print(visible(render_report(run), keep_newlines=True), end="")
    return 0


def cmd_notebook_export(args: argparse.Namespace) -> int:
    from relay_repl.session.runs.notebook import export_ipynb

    out = export_ipynb(Path(args.file), args.run, Path(args.ipynb))
    print(f"wrote {out}")
    return 0
