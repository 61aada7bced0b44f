"""`relay fidelity`: every client fact relay depends on, checked live against a client set."""

from __future__ import annotations

import argparse
from typing import Any

from relay_repl.frontends.kind_words import KindsHelp
from relay_repl.frontends.commands.common import progress


def register(sub: Any) -> None:
    """Add `relay fidelity` to the subparsers."""
    s = sub.add_parser(
        "fidelity",
        help="check every client fact relay depends on against a client set; verify its versions here",
        description="Run the live checks (discovery, socket and queue wire formats, rollout and transcript "
        "records, daemon status, every screen class, busy submit rules, zero-key preflight refusals) against "
        "every client the lab runs (each kind's facts are its own package's: {lab_kinds}) in "
        "private labs, print one row per fact (✔/✘ with evidence) and record fresh "
        "screen captures (beside the golden ones in a checkout, else under the state directory). When every "
        "fact holds for a client, its version is recorded as verified on this machine and relay's refusals "
        "for it lift. The checks are part of the installed package (no checkout, no pytest). Exit 0 all "
        "hold, 1 some failed.",
        formatter_class=KindsHelp,
    )
    s.add_argument("--clients", default="pinned", metavar="SET",
                   help="pinned (default), latest (npm's newest, installed beside the pinned), system (the "
                        "{binaries} on your PATH) or an npm prefix directory")
    s.add_argument("--json", action="store_true", help="the report as JSON (progress on stderr)")
    s.add_argument("--no-screens", action="store_true", help="skip the screen recorder (faster; then no "
                   "screen facts are checked and nothing is recorded as verified for the tmux path)")
    s.set_defaults(func=cmd_fidelity, lab_use="none")


def cmd_fidelity(args: argparse.Namespace) -> int:
    from relay_repl.lab.fidelity import run

    report = run(args.clients, progress=progress, screens=not args.no_screens)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(report.table())
    return 0 if report.ok else 1
