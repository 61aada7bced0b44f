"""`relay ask`: how an agent asks the operator's relay to send for it (held for the operator's approval).

`relay ask TARGET BODY...` with no option is run by `run_words` from frontends/entry.py, without the
CLI's parser, as `relay reply` is (issue 33: one process start per ask from an agent's shell);
anything else (`--status`, `--json`, `--help`, too few words) is parsed by the CLI as before."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def register(sub: Any) -> None:
    """Add `relay ask` to the subparsers."""
    import argparse

    s = sub.add_parser(
        "ask",
        help="(for an agent) ask the operator's relay to send a line to another session; held for approval",
        description="Ask the operator's relay to send BODY to TARGET, from inside an agent session's shell (the "
        "MCP tool relay_send does the same). Nothing is sent by this command: the request is held for the "
        "operator's approval, and the answer names its id, e.g.\n"
        "  relay ask claude:alpha 'can you review src/x.py?'\n"
        "  held for the operator's approval (request beta-3)\n"
        "  relay ask --status beta-3        # held, approved, denied (why), expired, queued, delivered, failed\n"
        "Relay establishes which session asks from the kernel's view of this process (never from a name "
        "it is given); when it cannot, nothing is held and the line says why. Only the asker may read a "
        "request's status. With --want reply the receiver's answer comes back to you as a relay message "
        "carrying re=<request id>, after the operator approves that too.\n\n"
        "exit codes: 0 held (or the status was read), 1 refused, 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("target", nargs="?", help="the session to send to (kind:name)")
    s.add_argument("body", nargs="*", help="the one line to send")
    s.add_argument("--want", "-w", choices=["reply", "ack", "none"], default="reply",
                   help="what you ask the receiver for (default reply)")
    s.add_argument("--status", metavar="ID", help="read the state of your request ID instead of asking")
    s.add_argument("--json", action="store_true", help="print the answer as JSON")
    s.set_defaults(func=cmd_ask)


def cmd_ask(args: argparse.Namespace) -> int:
    from relay_repl.core.controls import visible
    from relay_repl.core.errors import UsageError

    if args.status is not None:
        if args.target or args.body:
            raise UsageError("--status ID reads a request: give no TARGET or BODY with it")
        import json

        from relay_repl.session.core.asking import status

        got = status(args.status)
        if args.json:
            print(json.dumps(got, ensure_ascii=True))
        else:
            steps = " -> ".join(str(h["state"]) for h in got["history"])
            why = f" ({got['why']})" if got.get("why") else ""
            print(visible(f"request {got['request']} to {got['to']}: {got['state']}{why}; steps: {steps}"))
        return 0
    if not args.target or not args.body:
        raise UsageError("relay ask TARGET BODY: name the session and the line to send (or --status ID)")
    return _ask(args.target, args.body, args.want, as_json=args.json)


def _ask(target: str, body: list[str], want: str, *, as_json: bool) -> int:
    from relay_repl.core.controls import visible
    from relay_repl.session.core.asking import ask

    got = ask(target, " ".join(body), want, shell=True)
    if as_json:
        import json

        print(json.dumps(got, ensure_ascii=True))
    else:
        print(visible(str(got["text"])))
    return 0


def plain_words(words: list[str]) -> bool:
    """Whether `words` (after `ask`) are what the CLI's parser reads as TARGET BODY... and nothing
    else: two or more, none an option (argparse reads any word starting with `-` as one)."""
    return len(words) >= 2 and not any(w.startswith("-") for w in words)


def run_words(words: list[str]) -> int:
    """`relay ask TARGET BODY...` for `words` that `plain_words` accepts (frontends/entry.py runs it
    as the CLI runs a command: the defaults of --want and --json, no --status)."""
    return _ask(words[0], words[1:], "reply", as_json=False)
