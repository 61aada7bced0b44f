"""Reply routes per agent kind: what the plan says, and when there is none (pure)."""

from __future__ import annotations

from relay_repl.agents import claude_code, codex
from relay_repl.agents.replies import ReplyOptions
from relay_repl.core.plan import ReplyContext
from relay_repl.core.target import Target

CLAUDE = Target(kind="claude-code", prefix="claude", name="alpha", address="/run/cc-socks/5.sock", pid=5,
                identified_by="test")
CODEX = Target(kind="codex", prefix="codex", name="beta", address="01a2-thread", pid=9, identified_by="test")
INBOX = ReplyContext(relay_id="op-1", inbox="/s/inbox.sock")


def test_claude_needs_the_listed_inbox_and_a_native_message():
    no = claude_code.reply_route(CLAUDE, INBOX)
    assert not no.ok and no.offer_register and "register_inbox" in (no.missing or "")
    listed = INBOX.model_copy(update={"listed_name": "relay-operator", "listed_socket": "/run/cc-socks/7.sock"})
    yes = claude_code.reply_route(CLAUDE, listed)
    assert yes.ok and yes.needs_native_reply and "SendMessage to 'relay-operator'" in yes.how and "re=op-1" in yes.how
    assert not claude_code.reply_route(CLAUDE, ReplyContext(relay_id="op-1")).ok  # no inbox at all


def test_codex_route_follows_its_own_configuration():
    free = ReplyOptions(relay_reply=True, relay_reply_why="sandbox_mode danger-full-access")
    r = codex.reply_route(CODEX, INBOX, free)
    assert r.ok and "`relay reply op-1 <text>`" in r.how and "CODEX_THREAD_ID" in r.how
    boxed = ReplyOptions(relay_reply=False, relay_reply_why="sandbox_mode workspace-write: refuses the socket")
    r = codex.reply_route(CODEX, INBOX, boxed)
    assert not r.ok and "no relay MCP server" in (r.missing or "") and "turn_reply" in (r.missing or "")
    mcp = boxed.model_copy(update={"mcp": "[mcp_servers.relay] in config.toml", "mcp_note": "may ask approval"})
    r = codex.reply_route(CODEX, INBOX, mcp)
    assert r.ok and "relay_reply(relay_id=op-1)" in r.how and "may ask approval" in r.how
    assert not codex.reply_route(CODEX, ReplyContext(relay_id="op-1"), free).ok
