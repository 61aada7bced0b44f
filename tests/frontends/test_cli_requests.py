"""`relay requests`, `relay deny`, `relay approve` and `relay ask` from a shell (issue 31), fast."""

from __future__ import annotations

import json

import pytest

from relay_repl.core.request import Request
from relay_repl.frontends.cli import main
from relay_repl.store.ledger import Ledger
from relay_repl.store.requests import RequestStore


@pytest.fixture
def no_agents(tmp_path, monkeypatch, relay_home):
    """This process runs under no agent session: the kinds' homes are empty."""
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    return relay_home


def held(rid: str = "beta-1", body: str = "please push the tag") -> Request:
    led = Ledger.default()
    req = Request.held(id=rid, asker="codex:beta", verdict="verified", evidence="", asker_pid=1, to="claude:alpha",
                       body=body, want="reply", hop=0, line="l")
    RequestStore(led).add(req)
    led.close()
    return req


def test_requests_lists_the_held_ones_and_json_is_only_json(no_agents, capsys):
    assert main(["requests"]) == 0
    assert capsys.readouterr().out.strip() == "no held requests"
    held(body="please push the tag \x1b[2J")
    assert main(["requests"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("request beta-1 from codex:beta [verified]: send to claude:alpha (want=reply, hop 0) "
                              "FLAG: asks for a consent-only act (push)")
    assert "\x1b" not in out.out and "relay approve ID" in out.err
    assert main(["requests", "--json"]) == 0
    (row,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert row["request"] == "beta-1" and row["state"] == "held" and row["asker"] == "codex:beta"


def test_deny_refuses_a_held_request_and_a_second_deny_says_why_not(no_agents, capsys):
    held()
    assert main(["deny", "beta-1", "--why", "not during the release"]) == 0
    assert "request beta-1 from codex:beta denied: not during the release; nothing was sent" in capsys.readouterr().out
    assert RequestStore(Ledger.default()).get("beta-1").state == "denied"
    assert main(["deny", "beta-1"]) == 2
    assert "request beta-1 is denied (not during the release): only a held request" in capsys.readouterr().err
    assert main(["deny", "nope-1"]) == 2


def test_approve_without_a_terminal_leaves_the_request_held(no_agents, capsys):
    held()
    assert main(["approve", "beta-1"]) == 2
    assert "needs a terminal" in capsys.readouterr().err
    assert RequestStore(Ledger.default()).get("beta-1").state == "held"


def test_ask_outside_any_agent_is_refused_in_one_line(no_agents, capsys):
    assert main(["ask", "claude:alpha", "hi"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("relay: not held: relay cannot establish which session is asking")
    assert main(["ask"]) == 2 and main(["ask", "--status", "beta-1", "claude:alpha"]) == 2
    assert main(["ask", "--status", "beta-1"]) == 1
    assert "shown to its asker only" in capsys.readouterr().err
