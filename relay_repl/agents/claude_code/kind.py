"""Claude Code as one `AgentKind` (agents/kind.py): registered through the entry point
`claude-code` in pyproject.toml. Its capabilities load on first use (agents/capabilities.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relay_repl.agents.capabilities import InboxListing, KindFacts, ProviderDiscovery, RepliesBase, TransportsBase, capability
from relay_repl.agents.claude_code.agent import BINARY, KIND
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code.plan_words import LABEL
from relay_repl.agents.kind import AgentKindBase, LabDriver

if TYPE_CHECKING:  # annotations only: each loads on first use
    from relay_repl.agents.socket_wire import SocketWire
    from relay_repl.agents.turn_reply import TurnWatch
    from relay_repl.core.delivery import Delivery
    from relay_repl.core.plan import ReplyContext, ReplyOptions, ReplyRoute
    from relay_repl.core.target import Target

_HERE = "relay_repl.agents.claude_code"


class ClaudeTransports(TransportsBase):
    """Its sessions listen on a messaging socket (socket_ops.py)."""

    def socket_wire(self) -> SocketWire:
        from relay_repl.agents.claude_code.socket_ops import ClaudeSocketWire

        return ClaudeSocketWire()


class ClaudeReplies(RepliesBase):
    """Native SendMessage reaches only a peer ListAgents shows, so the operator's inbox is listed in
    Claude's registry first; the routes its config allows (replies.py), its turn reply (transcript)."""

    answers_listed_inbox = True

    def route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        from relay_repl.agents.claude_code.provider import reply_route

        return reply_route(target, ctx)

    def options(self, target: Target) -> ReplyOptions:
        from relay_repl.agents.claude_code.replies import claude_options

        return claude_options(target)

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        from relay_repl.agents.claude_code.replies import claude_watch

        return claude_watch(target, delivery)

    def inbox_listing(self, name: str, pins: dict[str, Any] | None = None) -> InboxListing:
        """Listed in Claude's registry (sessions/<pid>.json + key file), for the verified version only."""
        from relay_repl.agents.claude_code.peer import ClaudePeerRegistration
        from relay_repl.agents.versions import require_verified

        return ClaudePeerRegistration(name=name, claude_version=require_verified(self.facts.kind), pins=pins)

    def listed_peer_name(self, address: str) -> str | None:
        """Read from Claude's registry (`$CLAUDE_CONFIG_DIR/sessions`, live records only), as ListAgents
        shows it: a session whose name is `address`, or the record of the process whose pid ends the
        address (the operator's address is `user.host.pid`; its inbox registers under that pid, see peer.py)."""
        from relay_repl.agents.claude_code.peer import claude_config_dir, live_claude_records

        records = live_claude_records(claude_config_dir())
        for rec in records:
            if rec.get("name") == address:
                return address
        tail = address.rsplit(".", 1)[-1]
        if tail.isdigit():
            for rec in records:
                if rec.get("pid") == int(tail) and rec.get("name"):
                    return str(rec["name"])
        return None


class ClaudeCodeKind(AgentKindBase):
    """Claude Code: `claude:NAME` (the session's name in `claude agents --json`); its records carry
    kernel-supplied provenance (verifiedPeerPid), so `relay verify` can prove who sent a message."""

    facts = KindFacts(
        kind=KIND, prefix="claude", label=LABEL, detail_model=ClaudeDetail, binary=BINARY,
        npm_package="@anthropic-ai/claude-code", package=_HERE,
        address_rule="claude:NAME (the session's name as `claude agents --json` lists it)",
        mcp_setup=("Claude Code:            claude mcp add relay -- relay mcp",))
    discovery = capability(ProviderDiscovery, f"{_HERE}.provider:ClaudeProvider")
    screen = capability(f"{_HERE}.agent:ClaudeScreen")
    evidence = capability(f"{_HERE}.agent:ClaudeEvidence")
    replies = capability(ClaudeReplies)
    checks = capability(f"{_HERE}.verify:ClaudeChecks")
    transports = capability(ClaudeTransports)

    def lab_driver(self) -> LabDriver:
        from relay_repl.agents.claude_code.lab import ClaudeLab

        return ClaudeLab(self.facts)
