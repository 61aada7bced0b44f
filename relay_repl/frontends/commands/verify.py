"""`relay verify`: who really sent a relay id, judged from the receiver's origin records."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_repl.frontends.kind_words import KindsRawHelp


def register(sub: Any) -> None:
    """Add `relay verify` to the subparsers."""
    s = sub.add_parser(
        "verify",
        help="audit who really sent a relay id (the receiver's own origin records)",
        description="Audit who really sent a message, from the receiver's own records: a kind whose records carry "
        "kernel-supplied provenance ({kernel_kinds}). For Claude Code it finds the transcript records whose envelope header has exactly "
        "id=RELAY_ID (never a substring: id=1 does not match id=10 nor a body quoting it), reading both "
        "`.origin` and `.attachment.origin`, prints the content beside each origin record, and judges the "
        "kernel-supplied verifiedPeerPid against the registry: a genuine Claude session owns a live <pid>.sock; "
        "the operator's relay is the pid its ledger wrote that msg_id from; anything else is an unknown process "
        "(an injector) or a mismatch with what the envelope claims. hopChain is shown as corroboration only. "
        "More than one record is reported as a non-unique id, never resolved by guessing. A target of a kind that "
        "keeps no provenance ({unproven_kinds}) gets what is known shown (e.g. Codex's turn trigger and queue "
        "client_id). Read-only; streams the file.\n\n"
        "examples:\n"
        "  relay --lab verify operator.vm.4242-1 --in claude:alpha\n"
        "  relay verify alpha-7 --transcript ~/.claude/projects/-home-me-proj/<session-id>.jsonl --json\n\n"
        "exit codes: 0 verified, 1 none found, 4 ambiguous (non-unique id), mismatch or not verifiable "
        "(unknown process, a kind without provenance), 2 usage error",
        formatter_class=KindsRawHelp,
    )
    s.add_argument("relay_id", help="the id= value, exactly")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--in", dest="target", metavar="TARGET",
                       help="a discovered target ({targets}); default: every live target whose kind keeps "
                            "kernel provenance ({kernel_kinds})")
    where.add_argument("--transcript", metavar="FILE", help="any Claude transcript .jsonl file (audit after the fact)")
    s.add_argument("--json", action="store_true", help="the report as one JSON object (verdict, records with path, "
                   "content, origin, verdict)")
    s.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    """Read-only: a transcript file needs no discovery; a target (or none) does."""
    from relay_repl.session.core import verify as v
    from relay_repl.store.ledger import Ledger

    ledger = Ledger.read_only_default()  # read-only: never creates, changes or deletes a file
    if args.transcript is not None:
        report = v.verify_file(args.relay_id, args.transcript, ledger)
    else:
        import anyio

        from relay_repl.session.app import make_session

        from relay_repl.core.errors import DiscoveryError

        session = make_session(fake=args.fake, ledger=ledger)
        try:
            report = anyio.run(lambda: session.verify(args.relay_id, args.target))
        except DiscoveryError as exc:  # exit 1 means "none found" here: a bad target is a usage error
            print(f"relay: {exc}", file=sys.stderr)
            return 2
    try:
        print(report.model_dump_json(indent=1) if args.json else report.render())
        sys.stdout.flush()
    except BrokenPipeError:  # `relay verify ... | head`: the reader left; the verdict is the exit code
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return report.exit_code
