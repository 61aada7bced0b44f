"""`relay serve --stdio`: the other end of a host's ssh channel (session/remote/serve.py).

Exactly `relay serve --stdio` is run by `run_plain` from frontends/entry.py, without the CLI's
parser (issue 33: its first answer on a warm channel is awaited by the operator's relay)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def register(sub: Any) -> None:
    """Add `relay serve` to the subparsers."""
    s = sub.add_parser("serve", help="answer another relay over ssh (`relay serve --stdio`; not for a terminal)",
                       description="Run by a relay on another machine through ssh: newline-delimited JSON requests "
                       "on stdin, one answer per line on stdout. Nothing listens on a port.")
    s.add_argument("--stdio", action="store_true", required=True, help="speak on stdin/stdout (the only mode)")
    s.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from relay_repl.session.remote.serve import run_stdio

    return run_stdio(make_session, fake=bool(getattr(args, "fake", False)))


def run_plain(soon: Any = None) -> int:
    """`relay serve --stdio`, no other word (what a channel runs); `soon(target, env)`: entry.py's head
    start for a send's reply route (frontends/send_plain.py `reply_route_soon`)."""
    from relay_repl.session.remote.serve import run_stdio

    return run_stdio(make_session, fake=False, soon=soon)


def make_session(**kwargs: Any) -> Any:
    """session.app's `make_session`, imported when the first op needs a session (a hello needs none:
    `relay serve --stdio` answers it without pydantic)."""
    from relay_repl.session.app import make_session as make

    return make(**kwargs)
