"""Shared fixtures: relay_repl's own pytest plugin (relay_repl/testing/pytest_plugin.py), the
one home of the fixtures every test here and every plugin author's test uses:

- Every test gets a private RELAY_HOME (`relay_home`, autouse).
- Async tests run on asyncio (`anyio_backend`).
- The doubles: `memory_ledger`, `memory_transport`, `scripted_gate`, `fake_session`, `hostile`.
- `lab`: ONE offline lab (real Claude Code + Codex, stub models) for the whole
  test session, reused by every live module that does not need its own. Tests
  that use it see RELAY_HOME and the lab's environment (CLAUDE_CONFIG_DIR,
  CODEX_HOME, XDG_RUNTIME_DIR, RELAY_TMUX_SOCKET, PATH) so discovery finds the
  lab's sessions. Tests must leave its sessions idle and named as they found them.
"""

from __future__ import annotations

# tests.support.live_schedule: how the live half is spread over its two xdist workers (lab groups)
pytest_plugins = ["relay_repl.testing.pytest_plugin", "tests.support.live_schedule"]

# Every hypothesis test of the fast half runs the same examples on every run (a fixed seed), with a
# bounded count (each test's own max_examples, else hypothesis' 100): a failure is reproduced by
# rerunning, never a flake that comes and goes (issue 32).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("relay", derandomize=True, deadline=None, print_blob=True)
_hypothesis_settings.load_profile("relay")

