"""A real session with its inbox open, for live tests: package code (relay_repl.lab.sessions),
because `relay fidelity` runs the same checks from an installed wheel."""

from relay_repl.lab.sessions import live_session

__all__ = ["live_session"]
