"""Claude Code as one `AgentKind` (agents/kind.py): registered through the entry point
`claude-code` in pyproject.toml; what the session, the doctor and the lab ask of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal

from relay_repl.agents.claude_code.agent import BINARY, KIND, ClaudeAgent
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.kind import AgentKindBase, InboxListing, LabContext, LabLaunch, LabOps, LabReady, LabSpec
from relay_repl.core.target import Me, Target

if TYPE_CHECKING:  # annotations only: off the `relay targets` path
    from relay_repl.core.check import Check
    from relay_repl.core.plan import ReplyContext, ReplyOptions, ReplyRoute
    from relay_repl.store.ledger import Ledger
    from relay_repl.core.delivery import Delivery
    from relay_repl.agents.provenance import CheckedRecord, VerifyReport
    from relay_repl.agents.discovery import KindProvider
    from relay_repl.agents.turn_reply import TurnWatch
    from relay_repl.agents.claude_code.socket_ops import ClaudeSocketWire
    from relay_repl.system.panes import PaneRoster

NPM_PACKAGE = "@anthropic-ai/claude-code"


class ClaudeCodeKind(ClaudeAgent, AgentKindBase):
    """Claude Code: `claude:NAME` (the session's name in `claude agents --json`); its records carry
    kernel-supplied provenance (verifiedPeerPid), so `relay verify` can prove who sent a message."""

    kind = KIND
    prefix = "claude"
    label = "Claude Code"
    mcp_setup = ("Claude Code:            claude mcp add relay -- relay mcp",)
    provenance: Literal["kernel", "none"] = "kernel"
    detail_model = ClaudeDetail
    binary = BINARY
    npm_package = NPM_PACKAGE
    answers_listed_inbox = True  # native SendMessage reaches only a peer ListAgents shows

    def address_rule(self) -> str:
        return "claude:NAME (the session's name as `claude agents --json` lists it)"

    def providers(self, env: Mapping[str, str], panes: PaneRoster) -> Sequence[KindProvider]:
        from relay_repl.agents.claude_code.provider import ClaudeProvider

        return [ClaudeProvider(env=env, panes=panes)]

    def own_address(self, env: Mapping[str, str]) -> Me | None:
        from relay_repl.agents.claude_code.provider import ClaudeProvider

        return ClaudeProvider(env=env).own_address()

    def socket_wire(self) -> ClaudeSocketWire:
        from relay_repl.agents.claude_code.socket_ops import ClaudeSocketWire

        return ClaudeSocketWire()

    def reply_route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        from relay_repl.agents.claude_code.provider import reply_route

        return reply_route(target, ctx)

    def reply_options(self, target: Target) -> ReplyOptions | None:
        from relay_repl.agents.claude_code.replies import claude_options

        return claude_options(target)

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        from relay_repl.agents.claude_code.replies import claude_watch

        return claude_watch(target, delivery)

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        from relay_repl.agents.claude_code.verify import verify_target

        return verify_target(relay_id, target, ledger)

    def verify_file(self, relay_id: str, path: Path, ledger: Ledger | None) -> VerifyReport | None:
        from relay_repl.agents.claude_code.verify import verify_file

        return verify_file(relay_id, path, ledger)

    def origin_records(self, relay_id: str, target: Target,
                       ledger: Ledger | None) -> tuple[list[CheckedRecord], str, int, int] | None:
        from relay_repl.agents.claude_code.verify import records_of

        return records_of(relay_id, target, ledger)

    async def doctor_checks(self, env: Mapping[str, str]) -> list[Check]:
        from relay_repl.agents.claude_code.doctor import check_claude

        return await check_claude(env)

    def inbox_listing(self, name: str) -> InboxListing | None:
        """Listed in Claude's registry (sessions/<pid>.json + key file), for the verified version only."""
        from relay_repl.agents.claude_code.peer import ClaudePeerRegistration
        from relay_repl.agents.versions import require_verified

        return ClaudePeerRegistration(name=name, claude_version=require_verified(self.kind))

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

    def fidelity(self) -> ModuleType | None:
        import relay_repl.agents.claude_code.fidelity as fidelity

        return fidelity

    # -- the lab (agents/claude_code/lab.py) -----------------------------------------------------

    def lab(self) -> LabSpec | None:
        from relay_repl.agents.claude_code.lab import SPEC

        return SPEC

    def lab_files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        from relay_repl.agents.claude_code.lab import files

        return files(ctx, names)

    def lab_launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        from relay_repl.agents.claude_code.lab import launch

        return launch(ctx, name)

    def lab_wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        from relay_repl.agents.claude_code.lab import wait

        return wait(ctx, name, ops, deadline)

    def lab_refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        from relay_repl.agents.claude_code.lab import refresh

        return refresh(ctx, prior, pane_pid, dead)

    def lab_status(self, ctx: LabContext, prior: LabReady) -> str | None:
        from relay_repl.agents.claude_code.lab import status

        return status(ctx, prior)
