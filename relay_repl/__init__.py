"""relay_repl: relay one-line messages between live AI coding-agent sessions.

The public surface: what a notebook, a recipe or a script imports (`from relay_repl import
Session, visible`) is named in `__all__` and nowhere deeper; what an agent or transport package
needs is in `relay_repl.plugins`. Both lists are pinned by tests/test_public_surface.py, so a
move inside the package cannot break a user's import.

Kept import-light on purpose: `relay` must reach its first prompt about as fast as a bare
ptpython, so nothing is imported here until a name is first asked for (module `__getattr__`):
`import relay_repl` loads nothing more, `relay_repl.Session` loads the session then.
"""

__version__ = "0.1.0"

_HOMES = {
    "Session": "relay_repl.session.session",
    "Target": "relay_repl.core.target",
    "Delivery": "relay_repl.core.delivery",
    "DeliveryState": "relay_repl.core.delivery",
    "Plan": "relay_repl.core.plan",
    "Envelope": "relay_repl.core.envelope",
    "visible": "relay_repl.core.controls",
    # the errors a user catches (core/errors.py): the base, then each family and the cases worth one except
    "RelayError": "relay_repl.core.errors",
    "UsageError": "relay_repl.core.errors",
    "EnvelopeError": "relay_repl.core.errors",
    "DiscoveryError": "relay_repl.core.errors",
    "UnknownTarget": "relay_repl.core.errors",
    "AmbiguousTarget": "relay_repl.core.errors",
    "StaleTarget": "relay_repl.core.errors",
    "PolicyRefusal": "relay_repl.core.errors",
    "Declined": "relay_repl.core.errors",
    "LoopHalt": "relay_repl.core.errors",
    "TransportError": "relay_repl.core.errors",
    "LedgerError": "relay_repl.core.errors",
    "HostError": "relay_repl.core.errors",
}
"""Each public name -> the module that holds it (imported on first use)."""

__all__ = [
    "__version__", "Session", "Target", "Delivery", "DeliveryState", "Plan", "Envelope", "visible", "RelayError",
    "UsageError", "EnvelopeError", "DiscoveryError", "UnknownTarget", "AmbiguousTarget", "StaleTarget",
    "PolicyRefusal", "Declined", "LoopHalt", "TransportError", "LedgerError", "HostError"
]  # each name of _HOMES (tests/test_public_surface.py checks they agree)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    from relay_repl.core.controls import visible
    from relay_repl.core.delivery import Delivery, DeliveryState
    from relay_repl.core.envelope import Envelope
    from relay_repl.core.errors import (AmbiguousTarget, Declined, DiscoveryError, EnvelopeError, HostError,
                                        LedgerError, LoopHalt, PolicyRefusal, RelayError, StaleTarget, TransportError,
                                        UnknownTarget, UsageError)
    from relay_repl.core.plan import Plan
    from relay_repl.core.target import Target
    from relay_repl.session.session import Session


def _lazy(module_name: str, homes: dict[str, str], name: str) -> object:
    """`name` from its home module (`module` or `module:attribute`), kept in `module_name`'s globals
    so the next look-up is plain."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    import importlib
    import sys

    module, _, attribute = home.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    setattr(sys.modules[module_name], name, value)
    return value


def __getattr__(name: str) -> object:
    return _lazy(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
