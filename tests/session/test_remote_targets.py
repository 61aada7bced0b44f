"""A host's target rows read back as local Targets (session/remote.target_from_json).

Found live: a Gemini CLI session on the second host made `relay hosts check` fail with a page of
pydantic errors, because the `relay hosts` process had not loaded the registry that types a kind's
detail. The probe runs in a fresh interpreter: this test process has the registry loaded already."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from relay_repl.session.remote.remote import target_from_json
for row in json.loads(sys.argv[1]):
    t = target_from_json("build-box", row)
    print(t.spec, type(t.detail).__name__)
"""

ROWS = [
    {"kind": "gemini-cli", "prefix": "gemini", "name": "gamma", "address": "a", "transports": ["tmux"],
     "identified_by": "proc", "live": True, "detail": {"gemini_dir": "/h/.gemini", "cwd": "/w"}},
    {"kind": "codex", "prefix": "codex", "name": "beta", "address": "b", "transports": ["codex-queue"],
     "identified_by": "rollout", "live": True, "detail": {}},
    # a kind this relay does not have (a newer relay or a plug-in there): listed, its detail left out
    {"kind": "other-agent", "prefix": "other", "name": "x", "address": "c", "transports": ["tmux"],
     "identified_by": "proc", "live": True, "detail": {"anything": 1}},
]


def test_every_kind_s_detail_is_typed_and_an_unknown_kind_is_still_listed():
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(ROWS)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["build-box/gemini:gamma GeminiDetail", "build-box/codex:beta CodexDetail",
                                     "build-box/other:x AgentDetail"]


def test_a_hosts_plan_names_the_host_in_its_header_and_line_1():
    """Issue 39: `Plan: send to claude:alpha` while line 1 said `h2/claude:alpha`."""
    from relay_repl.core.plan import Plan
    from relay_repl.session.remote.remote import shown_here

    there = Plan(action="send to claude:alpha", target="claude:alpha (pid 7, idle)", identified_by="registry",
                 transport="claude-code-message", payload="[relay/1 ...] hi", delivered_when="transcript")
    here = shown_here(there, "h2", "via ssh h2")
    text = here.render()
    assert text.splitlines()[0] == "Plan: send to h2/claude:alpha"
    assert "1 target      h2/claude:alpha (pid 7, idle)" in text and "route: via ssh h2" in text
    assert shown_here(there.model_copy(update={"action": "register inbox"}), "h2", "r").action == "register inbox on h2"
    assert here.payload == there.payload  # the bytes approved are the host's own
