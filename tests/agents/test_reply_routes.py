"""Which reply route a target's own configuration allows (agents.replies), from real config files."""

from __future__ import annotations

import pytest

from relay_repl.agents import reply_route
from relay_repl.agents.codex.replies import codex_options
from relay_repl.agents.replies import check_via
from relay_repl.core.errors import UsageError
from relay_repl.core.plan import ReplyContext
from relay_repl.core.target import Target

TID = "01a22eb0-4959-7af2-9b96-b3b3c432bfde"
MCP = '\n[mcp_servers.relay]\ncommand = "/opt/venv/bin/relay"\nargs = ["mcp"]\n'


def codex(home, config: str | None) -> Target:
    home.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (home / "config.toml").write_text(config)
    return Target(kind="codex", prefix="codex", name="beta", address=TID, pid=4242, identified_by="test",
                  detail={"codex_home": str(home)},
                  evidence_file=str(home / "sessions" / f"rollout-x-{TID}.jsonl"))


def ctx(via=None, inbox="/run/inbox.sock"):
    return ReplyContext(relay_id="op-1", inbox=inbox, via=via)


def test_unsandboxed_codex_answers_with_relay_reply(tmp_path):
    r = reply_route(codex(tmp_path, 'sandbox_mode = "danger-full-access"\n'), ctx())
    assert r.ok and r.via == "relay-reply" and r.how.startswith("codex:beta answers by running `relay reply op-1")
    assert "relay_reply" not in r.how  # no relay MCP server configured: not named


def test_unsandboxed_codex_with_the_relay_mcp_server_is_forecast_mcp_first_and_shell_as_the_alternative(tmp_path):
    """A Codex offered relay_reply calls it even where its shell could run `relay reply` (the lab's
    agents do): the plan names the MCP call first, `relay reply` as what may happen instead."""
    t = codex(tmp_path, 'sandbox_mode = "danger-full-access"\n' + MCP)
    r = reply_route(t, ctx())
    mcp, _, shell = r.how.partition("; or ")
    assert r.ok and r.via == "mcp" and mcp.startswith("the agent calls relay_reply (relay_id=op-1)"), r.how
    assert "[mcp_servers.relay]" in mcp and shell.startswith("codex:beta answers by running `relay reply op-1 <text>`")
    assert "lets its commands reach the inbox socket" in shell
    assert reply_route(t, ctx(via="mcp")).how == r.how  # asked for either, the agent may still take the other
    asked = reply_route(t, ctx(via="relay-reply"))
    assert asked.via == "relay-reply" and asked.how.startswith("codex:beta answers by running") and "; or the agent calls relay_reply" in asked.how
    turn = reply_route(t, ctx(via="turn"))
    assert turn.via == "turn" and "relay_reply" not in turn.how
    no_inbox = reply_route(t, ctx(inbox=None))  # both write into an inbox: none here
    assert not no_inbox.ok or no_inbox.via == "turn"
    refused = codex(tmp_path / "never", 'sandbox_mode = "danger-full-access"\napproval_policy = "never"\n' + MCP)
    r = reply_route(refused, ctx())  # a call Codex would refuse is not forecast
    assert r.via == "relay-reply" and "relay_reply" not in r.how


def test_codex_default_sandbox_without_mcp_answers_by_turn_reply(tmp_path):
    for config in (None, 'sandbox_mode = "workspace-write"\n'):  # unset means Codex's default, workspace-write
        t = codex(tmp_path / str(bool(config)), config)
        opts = codex_options(t)
        assert not opts.relay_reply and "refuses the unix socket" in opts.relay_reply_why and opts.mcp is None
        r = reply_route(t, ctx())
        assert r.ok and r.via == "turn" and r.how.startswith("turn reply: ") and TID in r.how
        assert reply_route(t, ctx(inbox=None)).via == "turn"  # needs no inbox at all


def test_codex_default_sandbox_with_the_relay_mcp_server(tmp_path):
    t = codex(tmp_path, 'sandbox_mode = "workspace-write"\n' + MCP)
    r = reply_route(t, ctx())
    assert r.ok and r.via == "mcp" and "relay_reply (relay_id=op-1)" in r.how and "[mcp_servers.relay]" in r.how
    assert "may ask the operator to approve" in r.how
    assert reply_route(t, ctx(inbox=None)).via == "turn"  # relay_reply writes into an inbox: none here
    forced = reply_route(t, ctx(via="turn"))
    assert forced.ok and forced.via == "turn"
    refused = reply_route(t, ctx(via="relay-reply"))
    assert not refused.ok and "cannot run `relay reply`" in (refused.missing or "")


def test_codex_mcp_that_approval_never_would_refuse_is_not_picked(tmp_path):
    t = codex(tmp_path, 'sandbox_mode = "workspace-write"\napproval_policy = "never"\n' + MCP)
    assert "refuses the call" in (codex_options(t).mcp_note or "")
    assert reply_route(t, ctx()).via == "turn"
    approved = codex(tmp_path / "ok", 'sandbox_mode = "workspace-write"\napproval_policy = "never"\n' + MCP
                     + 'default_tools_approval_mode = "approve"\n')
    assert reply_route(approved, ctx()).via == "mcp" and codex_options(approved).mcp_note is None


def test_other_mcp_servers_and_disabled_relay_do_not_count(tmp_path):
    other = '\n[mcp_servers.docs]\ncommand = "docs-server"\nargs = ["mcp"]\n'
    off = MCP + "enabled = false\n"
    for name, cfg in (("other", other), ("off", off)):
        assert codex_options(codex(tmp_path / name, 'sandbox_mode = "workspace-write"\n' + cfg)).mcp is None
    module = '\n[mcp_servers.r]\ncommand = "/usr/bin/python3"\nargs = ["-m", "relay_repl", "mcp"]\n'
    assert codex_options(codex(tmp_path / "m", module)).mcp == f"[mcp_servers.r] in {tmp_path / 'm' / 'config.toml'}"


def test_claude_routes(tmp_path):
    t = Target(kind="claude-code", prefix="claude", name="alpha", address="/run/cc-socks/1.sock", pid=None,
               identified_by="test", evidence_file=str(tmp_path / "t.jsonl"))
    native = reply_route(t, ReplyContext(relay_id="op-1", inbox="/run/i.sock", listed_name="relay-operator",
                                         listed_socket="/run/cc-socks/9.sock"))
    assert native.ok and native.via == "native"
    unlisted = reply_route(t, ctx())
    assert not unlisted.ok and unlisted.offer_register  # listing the inbox is still what is offered first
    turn = reply_route(t, ctx(via="turn"))
    assert turn.ok and turn.via == "turn" and str(tmp_path / "t.jsonl") in turn.how
    assert not reply_route(t, ctx(via="mcp")).ok  # no relay MCP server configured for it


def test_unknown_via_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown reply route 'sms'"):
        check_via("sms")


def test_gemini_routes_follow_its_sandbox_setting(tmp_path):
    """The same order as Codex (agents.replies.configured_route), from Gemini CLI's settings.json: an
    untrusted MCP server only asks the operator first, so it is still picked."""
    import json

    gdir = tmp_path / ".gemini"
    gdir.mkdir()
    t = Target(kind="gemini-cli", prefix="gemini", name="gamma", address="s", pid=4243, identified_by="test",
               evidence_file=str(tmp_path / "chat.jsonl"), detail={"gemini_dir": str(gdir)})
    server = {"r": {"command": "/opt/venv/bin/relay", "args": ["mcp"]}}
    (gdir / "settings.json").write_text(json.dumps({"mcpServers": server}))
    assert reply_route(t, ctx()).via == "relay-reply"
    (gdir / "settings.json").write_text(json.dumps({"tools": {"sandbox": "docker"}, "mcpServers": server}))
    r = reply_route(t, ctx())
    assert r.ok and r.via == "mcp" and "asks the operator" in r.how
    assert reply_route(t, ctx(inbox=None)).via == "turn"
    (gdir / "settings.json").write_text(json.dumps({"tools": {"sandbox": "docker"}}))
    r = reply_route(t, ctx())
    assert r.ok and r.via == "turn" and "chat.jsonl" in r.how
