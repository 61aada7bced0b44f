"""One small exception tree, so callers can catch broadly and recover narrowly.

Every error carries a one-line message that says what went wrong and what to
do next; front ends print `str(err)` and nothing else. Lower-layer errors
(OSError, sqlite3, libtmux, subprocess) are translated at the seam where they
happen, never leaked raw to the operator.
"""

from __future__ import annotations


class RelayError(Exception):
    """Base of every error relay_repl raises on purpose."""

    exit_code = 1


class UsageError(RelayError):
    """The operator's input is malformed (bad flag, bad target spec)."""

    exit_code = 2


class EnvelopeError(RelayError, ValueError):
    """A line that starts like a relay envelope but is malformed."""


class DiscoveryError(RelayError):
    """A target could not be resolved (unknown, ambiguous, stale, unreadable)."""


class UnknownTarget(DiscoveryError):
    pass


class AmbiguousTarget(DiscoveryError):
    pass


class StaleTarget(DiscoveryError):
    pass


class RegistryUnreadable(DiscoveryError):
    pass


class PolicyRefusal(RelayError):
    """A rule forbids the action (loop guard, peer consent, downgrade, unverified version)."""


class LoopHalt(PolicyRefusal):
    """Hop cap reached, duplicate id, or relay-halt in force."""


class Halted(LoopHalt):
    """A relay-halt came into force while a send was under way: raised at a stage
    boundary so that nothing more is typed, written or queued."""

    def __init__(self, reason: str, by: str) -> None:
        super().__init__(f"relay-halt is in force ({reason}, by {by})")
        self.reason = reason
        self.by = by


class TransportError(RelayError):
    """A transport could not do its stage (dead socket, CLI failure, pane gone)."""


class StageTimeout(TransportError):
    """A stage's bounded wait expired; the delivery is left pending at that stage."""


class TmuxError(RelayError):
    """A tmux command could not run (no tmux, timeout) or tmux refused it."""


class PaneGone(TmuxError, TransportError):
    """The pane (or its tmux server) no longer exists: nothing can be typed there."""


class LabError(RelayError):
    """The offline lab could not be installed, started, or cleaned."""
