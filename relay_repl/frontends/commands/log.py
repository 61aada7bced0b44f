"""`relay log`: the newest ledger events; `--follow` streams them as they land; `--diagram` draws an exchange."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from relay_repl.frontends.commands.common import print_events


def register(sub: Any) -> None:
    """Add `relay log` to the subparsers."""
    s = sub.add_parser(
        "log",
        help="show the newest ledger events (--follow: as they land; --diagram: a picture of an exchange)",
        description="Show the newest events of the append-only event log (plans, answers, stages, outcomes).\n\n"
        "  relay log -n 50                  the 50 newest events\n"
        "  relay log --follow               then every new event and inbox message as it lands (Ctrl-C ends)\n"
        "  relay log --follow --json        the same, one JSON object per line (progress on stderr)\n"
        "  relay log --diagram RUN_OR_ID    an SVG sequence diagram of a recipe run or one relay id\n"
        "                                   (written to RUN_OR_ID.svg; -o FILE, or -o - for stdout)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("-n", type=int, default=20, help="how many events (default 20)")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.add_argument("-f", "--follow", action="store_true",
                   help="keep running: print each new event and inbox message as it is written (read-only)")
    s.add_argument("--diagram", metavar="ID|RUN", help="write an SVG sequence diagram of this relay id or recipe run")
    s.add_argument("-o", "--output", metavar="FILE", help="with --diagram: where to write it (`-` for stdout)")
    s.add_argument("--force", action="store_true", help="with --diagram: replace an existing FILE")
    s.set_defaults(func=cmd_log)


def cmd_log(args: argparse.Namespace) -> int:
    from relay_repl.core.errors import UsageError

    if args.diagram is not None:
        if args.follow:
            raise UsageError("--diagram draws what the ledger holds now; it takes no --follow")
        return write_diagram(args.diagram, args.output, force=args.force, as_json=args.json)
    if args.output or args.force:
        raise UsageError("-o/--force go with --diagram ID (relay log --diagram ID -o FILE)")
    if args.n < 0:
        raise UsageError(f"-n {args.n}: give a number of events, 0 or more")
    import relay_repl.store.paths as paths
    from relay_repl.session.core.follow import LedgerFollower

    follower, first = LedgerFollower.from_tail(paths.ledger_path(), args.n)
    # `relay log --follow | head`: the reader leaving is a BrokenPipeError, which cli.main ends quietly (141)
    print_events(first.events, args.json)
    if not args.follow:
        return 0
    if first.inbox:
        print_inbox(first.inbox, args.json)
    sys.stdout.flush()
    print("relay: following the ledger (Ctrl-C ends)", file=sys.stderr, flush=True)
    return _follow(follower, args.json)


def _follow(follower: Any, as_json: bool) -> int:
    import anyio

    async def run() -> None:
        async for batch in follower.follow():
            print_events(batch.events, as_json)
            print_inbox(batch.inbox, as_json)
            sys.stdout.flush()

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        return 0
    return 0


def print_inbox(messages: list, as_json: bool) -> None:
    """Inbox messages in the stream, beside the events: `kind` "inbox" (JSON keeps the exact text;
    the terminal sees it through the one neutraliser)."""
    import json
    import time

    from relay_repl.core.controls import visible
    from relay_repl.store.timeline import message_verdict

    for m in messages:
        if as_json:
            print(json.dumps({"kind": "inbox", "inbox_seq": m.seq, "at": m.at, "relay_id": m.relay_id, "peer": m.peer,
                              "answers": m.answers, "hop": m.hop, "line": m.line,
                              "verdict": m.verdict.model_dump(mode="json") if m.verdict else None},
                             ensure_ascii=True))
        else:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.at))
            link = f"re {m.answers}" if m.answers else "unlinked"
            print(visible(f"{'#' + str(m.seq):>6} {when} {'inbox':<16} {m.relay_id or '-':<28} from {m.peer or '?'} "
                          f"[{message_verdict(m)}] {link}: {m.body}"))


def write_diagram(ref: str, output: str | None, *, force: bool = False, as_json: bool = False) -> int:
    """Read the exchange (read-only), draw it, write it: `output` (default `<ref>.svg` here; `-` stdout).

    An existing file is replaced only with `force`: the command was asked to read, and the
    file in its way may be someone's."""
    import json

    from relay_repl.core.errors import UsageError
    from relay_repl.core.sequence_svg import render_svg
    from relay_repl.store.exchange import read_exchange
    from relay_repl.store.ledger import Ledger

    if "/" in ref or not ref.strip():
        raise UsageError(f"--diagram {ref!r}: give a relay id or a run id (`relay log` lists them)")
    led = Ledger.read_only_default()
    try:
        ex = read_exchange(led, ref)
    finally:
        led.close()
    svg = render_svg(ex)
    summary = {"ref": ex.ref, "lifelines": ex.lifelines, "messages": len(ex.messages),
               "marks": [m.kind for m in ex.marks]}
    if output == "-":
        if as_json:
            raise UsageError("-o - writes the SVG to stdout, so it cannot also be JSON: give -o FILE with --json")
        sys.stdout.write(svg)
        return 0
    path = Path(output or f"{ref}.svg")
    if path.exists() and not force:
        raise UsageError(f"{path} exists: nothing was written; give --force to replace it, or -o ANOTHER.svg")
    try:
        path.write_text(svg, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}; give -o FILE somewhere writable") from exc
    summary["file"] = str(path)
    if as_json:
        print(json.dumps(summary, ensure_ascii=True))
    else:
        print(f"wrote {path}: {len(ex.lifelines)} lifelines, {len(ex.messages)} messages"
              + (f", {len(ex.marks)} marks" if ex.marks else ""))
    return 0
