"""The doubles for testing relay_repl and the packages beside it (beside the product, like the lab).

What a plugin author's fast test needs, named here (pinned by tests/testing/test_surface.py), each
the product's own double, never a copy:

- the ledger in memory: `Ledger.in_memory()` (the real schema and SQL, no file);
- the in-memory transport and its target: `InMemoryTransport`, `fake_target` (a receiver that
  holds exactly what was delivered), and the approvers `ScriptedGate` and `DenyGate`;
- pane I/O: `ReplayIO`, a `PaneIO` whose screen is a script of recorded captures (panes.py);
- the ssh channel: `HostileHost` with `HOST`, a host reached through a stand-in ssh on PATH
  (`standin_ssh`, hostile_host.py), honest or lying as told;
- the replays of the clients' own seams (`replay`): `codex queue` and its queue file, Codex taking
  a queued item into the rollout, a Claude session socket (replay.py);
- a private lab of the real pinned clients: `private_lab_home` (labs.py).

The fixtures over them are the pytest plugin `relay_repl.testing.pytest_plugin` (load it with
`pytest_plugins = ["relay_repl.testing.pytest_plugin"]` in a top-level conftest.py). Nothing is
imported until a name is asked for, as in `relay_repl/__init__.py`; nothing in the product imports
this package (pyproject's import contracts), and the lab parts need pytest.
"""

from relay_repl import _lazy

_HOMES = {
    "Ledger": "relay_repl.store.ledger",
    "InMemoryTransport": "relay_repl.transports.fake",
    "fake_target": "relay_repl.transports.fake",
    "ScriptedGate": "relay_repl.session.core.gate",
    "DenyGate": "relay_repl.session.core.gate",
    "ReplayIO": "relay_repl.testing.panes",
    "HostileHost": "relay_repl.testing.hosts",
    "HOST": "relay_repl.testing.hosts",
    "standin_ssh": "relay_repl.testing.hostile_host",
    "ClaudeSessionReplay": "relay_repl.testing.replay",
    "codex_cli": "relay_repl.testing.replay",
    "private_lab_home": "relay_repl.testing.labs",
}
"""Each public name -> the module that holds it (imported on first use)."""

__all__ = ["Ledger", "InMemoryTransport", "fake_target", "ScriptedGate", "DenyGate", "ReplayIO", "HostileHost",
           "HOST", "standin_ssh", "ClaudeSessionReplay", "codex_cli", "private_lab_home"]
# each name of _HOMES (tests/testing/test_surface.py checks they agree)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    from relay_repl.session.core.gate import DenyGate, ScriptedGate
    from relay_repl.store.ledger import Ledger
    from relay_repl.testing.hostile_host import standin_ssh
    from relay_repl.testing.hosts import HOST, HostileHost
    from relay_repl.testing.labs import private_lab_home
    from relay_repl.testing.panes import ReplayIO
    from relay_repl.testing.replay import ClaudeSessionReplay, codex_cli
    from relay_repl.transports.fake import InMemoryTransport, fake_target


def __getattr__(name: str) -> object:
    return _lazy(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
