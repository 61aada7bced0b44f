"""`relay reply`'s error inside an agent's sandbox names the routes that still reach the inbox; the
kind whose sandbox it is says so (`AgentKind.discovery.sandbox_note`), so session/core/reply.py names no kind."""

from __future__ import annotations

from relay_repl.agents import registry
from relay_repl.session.core.reply import _sandbox_hint


def test_the_sandboxed_kind_adds_its_note(monkeypatch):
    for k in registry.kinds():
        monkeypatch.delenv(f"{k.facts.prefix.upper()}_SANDBOX", raising=False)
    assert _sandbox_hint() == ""
    noted = [k for k in registry.kinds() if k.discovery.sandbox_note({f"{k.facts.prefix.upper()}_SANDBOX": "seatbelt"})]
    assert noted, "no kind notes its sandbox"
    k = noted[0]
    monkeypatch.setenv(f"{k.facts.prefix.upper()}_SANDBOX", "seatbelt")
    hint = _sandbox_hint()
    assert hint.startswith("; ") and "relay_reply tool" in hint, hint
