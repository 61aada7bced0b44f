"""Sentences the generic transports put in a plan, as plain text (standard library only).

Why here and not in transports/: a kind's plain plan (agents/<kind>/plain_plan.py, issue 40) prints
the plan a transport would build, before pydantic and the transports are loaded, and an agent module
never imports a transport. So the transport's own words live here once and both call them.
"""

from __future__ import annotations


def listener_file(reply: object) -> str:
    """The socket transports' `files` line: the receipt listener this send creates."""
    return (f"creates {reply}: a listening socket for the receiver's hold/drop/refuse receipts "
            "(removed when this relay exits; never replaces an existing file)")


NO_INBOX = "no inbox listening here: hold/drop/refuse receipts cannot come back"
"""The socket transports' note when this process has no inbox open."""
