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


def first_relay_error(exc: BaseException) -> RelayError | None:
    """The RelayError `exc` is, or the first one inside it if it is a task group's exception
    group (at any depth): what a front end prints as its one line. None for anything else."""
    if isinstance(exc, RelayError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_relay_error(inner)
            if found is not None:
                return found
    return None


class UsageError(RelayError):
    """The operator's input is malformed (bad flag, bad target spec)."""

    exit_code = 2


class MisnamedAttribute(UsageError, AttributeError):
    """An attribute the operator reached for on the wrong object (`session.wait_reply`); the message names
    the right call. Still an AttributeError, so `hasattr` and the REPL's completion see a plain miss."""


class EnvelopeError(RelayError, ValueError):
    """A line that starts like a relay envelope but is malformed."""


class DiscoveryError(RelayError):
    """A target could not be resolved (unknown, ambiguous, stale, unreadable)."""


class UnknownTarget(DiscoveryError):
    """The operator named a target nothing matches: a usage error (exit 2), as every command's help says."""

    exit_code = 2


class AmbiguousTarget(DiscoveryError):
    """The name matches more than one live session: the operator must name one (exit 2, a usage error)."""

    exit_code = 2


class StaleTarget(DiscoveryError):
    pass


class DaemonError(DiscoveryError):
    """The Codex app-server daemon did not answer its status API (discovery falls back to files)."""


class PolicyRefusal(RelayError):
    """A rule forbids the action (loop guard, peer consent, downgrade, unverified version)."""


class NoApproval(PolicyRefusal):
    """A side effect was attempted without a live approval the gate minted for its plan."""


class Declined(PolicyRefusal):
    """The operator answered No to the plan of their own action (`session.confirm`): nothing was done."""


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


class TmuxError(RelayError):
    """A tmux command could not run (no tmux, timeout) or tmux refused it."""


class PaneGone(TmuxError, TransportError):
    """The pane (or its tmux server) no longer exists: nothing can be typed there."""


class LedgerError(RelayError):
    """The ledger (SQLite) cannot be opened, read or written; the message says how to fix it."""


class LabError(RelayError):
    """The offline lab could not be installed, started, or cleaned."""


class HostError(RelayError):
    """A host reached over ssh could not be used (down, refused, no relay there)."""


class HostKeyError(HostError):
    """ssh refused the host's key (unknown or changed): relay never accepts a key itself."""


class ChannelLost(HostError):
    """The channel to a host closed in the middle of a request: what happened there is for
    that host's ledger to say (look before re-sending)."""


class ProtocolMismatch(HostError):
    """The two relays speak different `relay serve` protocol versions."""


class HostClaim(HostError):
    """A host reported what the operator did not approve (an outcome never asked for, one after a
    No, another target, other bytes, a state going backwards): its word is a claim, not believed.

    `host` names it; `what` is the claim in a few words. The one line says so and what to do."""

    def __init__(self, host: str, what: str) -> None:
        self.host, self.what = host, what
        super().__init__(f"host {host} reported {what} that the operator did not approve: not believed; check {host}")


class JsonRpcError(RelayError):
    """A JSON-RPC 2.0 request this process cannot serve (core/jsonrpc.py): the peer gets `code`
    and the one-line message in an `error` response; it never reaches an operator's terminal."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def describe(exc: BaseException, doing: str = "") -> str:
    """One sentence for the operator about an exception caught at a seam: our own errors
    say what to do already; the common lower-layer ones get their meaning and the next
    step; anything else names what was being done, never a Python type name."""
    where = f" while {doing}" if doing else ""
    if isinstance(exc, RelayError):
        return str(exc)
    if isinstance(exc, PermissionError):
        return f"permission denied{where} ({exc.filename or exc.strerror}): check the file's owner and mode"
    if isinstance(exc, FileNotFoundError):
        return f"{exc.filename or 'a file'} does not exist{where}: re-discover targets (`relay targets`) and retry"
    if isinstance(exc, TimeoutError):
        return f"timed out{where}: the other side did not answer; look at it before retrying"
    if isinstance(exc, OSError):
        return f"system error{where}: {exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    import sqlite3

    if isinstance(exc, sqlite3.Error):
        return f"a database could not be read or written{where} ({str(exc).splitlines()[0][:120]}): retry; `relay doctor` checks the ledger"
    text = str(exc).splitlines()[0][:160] if str(exc) else "no detail"
    return f"unexpected failure{where}: {text}; the ledger keeps the details (`relay why`)"


class FileProblem(UsageError):
    """A file a person or a peer can edit (hosts.toml, a recipe, a notebook's outputs, the lab's
    state, a client's registry) is not in a shape relay can read: one line that names the file,
    says what is wrong (and on which line, when that is known) and what to do, exit 2.

    Why its own class: every reader of such a file (store/loader.py) raises this, so a caller that
    can go on without the file (discovery skipping a client's record, `relay recipes` listing a
    bad one) catches exactly this and nothing that is a bug."""

    def __init__(self, path: object, problem: str, fix: str, line: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        self.line = line
        where = f" (line {line})" if line else ""
        super().__init__(f"{self.path}: {problem}{where}: {fix}")
