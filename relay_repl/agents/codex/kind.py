"""Codex as one `AgentKind` (agents/kind.py): registered through the entry point `codex`
in pyproject.toml. Its capabilities load on first use (agents/capabilities.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from relay_repl.agents.capabilities import KindFacts, ProviderDiscovery, RepliesBase, TransportsBase, capability
from relay_repl.agents.codex.agent import BINARY, KIND
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.kind import NO_HOME, AgentKindBase, LabDriver

if TYPE_CHECKING:  # annotations only: each loads on first use
    from relay_repl.agents.durable_queue import DurableQueue
    from relay_repl.agents.turn_reply import TurnWatch
    from relay_repl.core.delivery import Delivery
    from relay_repl.core.plan import ReplyContext, ReplyOptions, ReplyRoute
    from relay_repl.core.target import Target

_HERE = "relay_repl.agents.codex"


class CodexDiscovery(ProviderDiscovery):
    def sandbox_note(self, env: Mapping[str, str]) -> str | None:
        """Inside Codex's sandbox the inbox is out of reach (its pid namespace hides the REPL, and
        unix-socket connects are refused): say which routes still work instead."""
        if not any(k.startswith("CODEX_SANDBOX") for k in env):
            return None
        return ("this command runs inside Codex's sandbox, which cannot reach the inbox: answer with the "
                "relay_reply tool of the relay MCP server (`relay mcp`, started outside the sandbox), or end your "
                "turn with the answer as your final message (the operator reads it from your rollout)")


class CodexTransports(TransportsBase):
    """Its threads keep a durable queue (queue_ops.py)."""

    def durable_queue(self) -> DurableQueue:
        from relay_repl.agents.codex.queue_ops import CodexQueue

        return CodexQueue()


class CodexReplies(RepliesBase):
    """The routes its sandbox and config allow (replies.py), and its turn reply (the rollout)."""

    def route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        from relay_repl.agents.codex.provider import reply_route

        return reply_route(target, ctx)

    def options(self, target: Target) -> ReplyOptions:
        from relay_repl.agents.codex.replies import codex_options

        return codex_options(target)

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        from relay_repl.agents.codex.replies import codex_watch

        return codex_watch(target, delivery)


class CodexKind(AgentKindBase):
    """Codex: `codex:NAME` (the thread's name in session_index.jsonl) or `codex:<thread uuid>`; it keeps
    no provenance (a queued or typed message is plain user input), so origin is judged from the process
    that connects, never from its rollout."""

    facts = KindFacts(
        kind=KIND, prefix="codex", label="Codex", detail_model=CodexDetail, binary=BINARY, npm_package="@openai/codex",
        package=_HERE,
        address_rule="codex:NAME or codex:<thread uuid> (the thread's name in session_index.jsonl, or its id)",
        mcp_setup=('~/.codex/config.toml:   [mcp_servers.relay]',
                   '                        command = "relay"',
                   '                        args = ["mcp"]'),
        # `codex --version` writes helper links under $CODEX_HOME/tmp; with a home that cannot exist
        # it warns on stderr and still prints its version (0.171.0, measured)
        version_env={"CODEX_HOME": NO_HOME})
    discovery = capability(CodexDiscovery, f"{_HERE}.provider:CodexProvider")
    screen = capability(f"{_HERE}.agent:CodexScreen")
    evidence = capability(f"{_HERE}.agent:CodexEvidence")
    replies = capability(CodexReplies)
    checks = capability(f"{_HERE}.verify:CodexChecks")
    transports = capability(CodexTransports)

    def lab_driver(self) -> LabDriver:
        from relay_repl.agents.codex.lab import CodexLab

        return CodexLab(self.facts)
