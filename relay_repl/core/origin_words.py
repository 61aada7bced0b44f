"""The words of an origin verdict that a cheap path says as the full judge would.

Why a module of its own: `relay ask` from a shell no agent started is refused by each kind's
cheap rule (session/core/outside.py) without the judge (agents/origin.py), whose models are pydantic's;
both say the same line, from here (issue 33)."""

from __future__ import annotations


def no_session(pid: int) -> str:
    """Why process `pid` acts for no session: none was found at or above it."""
    return f"pid {pid} is no discovered session and was not started by one"
