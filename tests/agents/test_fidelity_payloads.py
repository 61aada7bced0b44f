"""Each kind's busy-receiver probe payload is built by the one envelope builder and parses back.

The probes (agents/<kind>/fidelity.py) run only against a live lab; when their ids stopped fitting
the builder's `<address>-<n>` rule, only the live half noticed (test_tmux_live's two busy tests).
Built at import now, so this fast test imports each module and fails first.
"""

from __future__ import annotations

import importlib

import pytest

from relay_repl.core.envelope import Envelope


@pytest.mark.parametrize("kind", ["claude_code", "codex", "gemini_cli"])
def test_the_busy_probe_payload_is_a_valid_envelope(kind):
    mod = importlib.import_module(f"relay_repl.agents.{kind}.fidelity")
    env = Envelope.parse(mod.BUSY_PAYLOAD)
    assert env is not None and env.compose() == mod.BUSY_PAYLOAD
    assert env.id.startswith("t-busy-") and env.want == "none" and env.hop == 0
