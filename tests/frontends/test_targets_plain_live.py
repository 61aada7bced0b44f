"""Live: `relay targets`' plain listing lists the lab (real Claude Code, Codex with its daemon, Gemini
CLI) exactly as the models' listing does: the same table and --json bytes, every kind's rows read
plain (no pydantic on their path; Gemini's state by its one classifier, loaded by file). The registry hazards
beside a real session: tests/agents/test_claude_listing_rule_live.py."""

from __future__ import annotations

import json

import pytest

from relay_repl.agents import default_providers
from relay_repl.agents.discovery import discover_all
from relay_repl.core.target import format_targets
from relay_repl.core.target_row import format_targets as table
from relay_repl.frontends.commands.targets import _target_json
from relay_repl.frontends.targets_plain import listing, listing_json, plain_rows
from relay_repl.system import loopless

pytestmark = pytest.mark.live


def test_the_plain_listing_lists_the_lab_as_the_models_do(lab):
    parts = dict(plain_rows())
    assert all(parts[k] is not None for k in ("claude-code", "codex", "gemini-cli")), parts  # all read plain
    found = listing()
    assert found is not None
    targets = loopless.run(lambda: discover_all(default_providers()))
    assert listing_json(found) == json.dumps([_target_json(t) for t in targets], indent=1)
    assert table(found) == format_targets(targets)
    live = {(t.kind, t.name): t for t in targets if t.live}
    for s in lab.sessions:
        if s.kind in ("claude-code", "codex", "gemini-cli"):
            t = live[(s.kind, s.name)]
            assert t.pane and "tmux" in t.transports, t  # rostered panes, both ways


def test_a_daemon_held_threads_version_is_what_its_binary_answers(lab):
    """issue 40: a Codex thread the answering daemon holds takes its version from the daemon's own
    word (its initialize userAgent), not from running the holder's binary; in the lab both say the same."""
    import os

    from relay_repl.agents.versions import binary_version

    targets = loopless.run(lambda: discover_all(default_providers()))
    codex = [t for t in targets if t.kind == "codex" and t.live and t.detail.holder_kind == "daemon"]
    assert codex, targets
    for t in codex:
        assert t.client_version and t.client_version == t.detail.holder_version
        assert t.client_version == binary_version(os.readlink(f"/proc/{t.pid}/exe"), kind="codex")


def test_a_plain_sends_plan_is_the_models_plan_for_every_lab_claude_session(lab):
    """issue 40: `relay send claude:NAME MESSAGE`'s plan printed before the models (frontends/send_plain.py)
    is the plan the models then ask about, on the real Claude sessions: fields, digest and bytes (the
    gate answers No: nothing is sent)."""
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.paths import ledger_path
    from tests.frontends.send_plain_helpers import same_plan

    Ledger(ledger_path())  # phase 1 plans only against a ledger that exists (the models make the first)
    claude = [s for s in lab.sessions if s.kind == "claude-code"]
    assert claude
    for s in claude:
        fields = same_plan(f"claude:{s.name}", "the plain plan test: not sent")
        assert fields["transport"] == "claude-code-socket" and fields["files"], fields
