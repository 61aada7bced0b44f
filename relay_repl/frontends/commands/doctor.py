"""`relay doctor`: each layer relay stands on, checked read-only, with the next step for a failure."""

from __future__ import annotations

import argparse
from typing import Any

from relay_repl.frontends.kind_words import KindsRawHelp


def register(sub: Any) -> None:
    """Add `relay doctor` to the subparsers."""
    s = sub.add_parser(
        "doctor",
        help="check every layer relay relies on; say what to do about each failure",
        description="Check, read-only, each layer relay stands on and print ✔ or ✘ with the next step: tmux and its "
        "version; each agent kind's client ({binaries}) found, its version, and whether that version is verified; "
        "each kind's own checks ({kinds}: where its client records its sessions, e.g. Claude Code's config dir and "
        "registry, Codex's CODEX_HOME, queue and daemon; whether an agent's sandbox lets it run `relay reply`); "
        "the state directory; the ledger's integrity; relay-halts in force. Each row says what it ran or read, and "
        "passes only on what that showed: a row with nothing there to check (its client not found, its directory "
        "never made) prints – skipped, with why.\n\nexit codes: 0 no row failed, 1 otherwise",
        formatter_class=KindsRawHelp,
    )
    s.add_argument("--json", action="store_true", help='{"ok": bool, "checks": [{"name", "ok", "skipped", "detail", '
                   '"fix"}]}; a skipped row (nothing there to check) is not ok and not a failure')
    s.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    import anyio
    import json

    from relay_repl.session.core.doctor import run_checks

    report = anyio.run(run_checks)
    if args.json:
        print(json.dumps({"ok": report.ok, "checks": [c.model_dump() for c in report]}, ensure_ascii=True))
    else:
        print(repr(report))
    return 0 if report.ok else 1
