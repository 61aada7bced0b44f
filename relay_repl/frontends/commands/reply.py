"""`relay reply`: answer a relay message into the operator's inbox (how a Codex agent replies).

`relay reply ID TEXT...` with no option is run by `run_words` from frontends/entry.py, without the
CLI's parser (argparse, its gettext and terminal-size lookups, the ~30 command modules): each
answer a Codex agent gives this way is one process start (issue 33). Anything else (`--help`, an
option, too few words) is parsed by the CLI as before, so its usage lines and errors are the same."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def register(sub: Any) -> None:
    """Add `relay reply` to the subparsers."""
    import argparse

    s = sub.add_parser(
        "reply",
        help="answer a relay message into the operator's inbox",
        description="Answer the relay message whose id you were given, into the inbox of the relay REPL that sent it. "
        "This is how a Codex agent (which cannot send natively) replies: run it as one command, e.g.\n"
        "  relay reply 'root.host.4242-3' 'tests pass on main'\n"
        "Only ids the operator sent are accepted; the reply carries hop+1 and stops at the hop cap.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("relay_id", help="the id= value of the message you are answering")
    s.add_argument("text", nargs="+", help="the reply, one line")
    s.set_defaults(func=cmd_reply)


def cmd_reply(args: argparse.Namespace) -> int:
    return _reply(args.relay_id, args.text)


def _reply(relay_id: str, text: list[str]) -> int:
    from relay_repl.session.core.reply import reply

    sent, path = reply(relay_id, " ".join(text))
    print(f"replied to {relay_id} as {sent.id} (hop {sent.hop}) into {path}")
    return 0


def plain_words(words: list[str]) -> bool:
    """Whether `words` (after `reply`) are what the CLI's parser reads as RELAY_ID TEXT... and nothing
    else: two or more, none an option (argparse reads any word starting with `-` as one)."""
    return len(words) >= 2 and not any(w.startswith("-") for w in words)


def run_words(words: list[str]) -> int:
    """`relay reply RELAY_ID TEXT...` for `words` that `plain_words` accepts (frontends/entry.py runs it
    as the CLI runs a command)."""
    return _reply(words[0], words[1:])
