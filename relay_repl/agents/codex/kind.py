"""Codex as one `AgentKind` (agents/kind.py): registered through the entry point `codex`
in pyproject.toml; what the session, the doctor and the lab ask of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal

from relay_repl.agents.codex.agent import BINARY, KIND, CodexAgent
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.kind import NO_HOME, AgentKindBase, LabContext, LabLaunch, LabOps, LabReady, LabSpec
from relay_repl.core.target import Me, Target

if TYPE_CHECKING:  # annotations only: off the `relay targets` path
    from relay_repl.core.check import Check
    from relay_repl.core.plan import ReplyContext, ReplyOptions, ReplyRoute
    from relay_repl.store.ledger import Ledger
    from relay_repl.core.delivery import Delivery
    from relay_repl.agents.provenance import VerifyReport
    from relay_repl.agents.discovery import KindProvider
    from relay_repl.agents.turn_reply import TurnWatch
    from relay_repl.agents.codex.queue_ops import CodexQueue
    from relay_repl.system.panes import PaneRoster

NPM_PACKAGE = "@openai/codex"


class CodexKind(CodexAgent, AgentKindBase):
    """Codex: `codex:NAME` (the thread's name in session_index.jsonl) or `codex:<thread uuid>`; it keeps
    no provenance (a queued or typed message is plain user input), so origin is judged from the process
    that connects, never from its rollout."""

    kind = KIND
    prefix = "codex"
    label = "Codex"
    mcp_setup = ('~/.codex/config.toml:   [mcp_servers.relay]',
                 '                        command = "relay"',
                 '                        args = ["mcp"]')
    provenance: Literal["kernel", "none"] = "none"
    detail_model = CodexDetail
    binary = BINARY
    npm_package = NPM_PACKAGE

    def address_rule(self) -> str:
        return "codex:NAME or codex:<thread uuid> (the thread's name in session_index.jsonl, or its id)"

    def providers(self, env: Mapping[str, str], panes: PaneRoster) -> Sequence[KindProvider]:
        from relay_repl.agents.codex.provider import CodexProvider

        return [CodexProvider(env=env, panes=panes)]

    def own_address(self, env: Mapping[str, str]) -> Me | None:
        from relay_repl.agents.codex.provider import CodexProvider

        return CodexProvider(env=env).own_address()

    def sandbox_note(self, env: Mapping[str, str]) -> str | None:
        """Inside Codex's sandbox the inbox is out of reach (its pid namespace hides the REPL, and
        unix-socket connects are refused): say which routes still work instead."""
        if not any(k.startswith("CODEX_SANDBOX") for k in env):
            return None
        return ("this command runs inside Codex's sandbox, which cannot reach the inbox: answer with the "
                "relay_reply tool of the relay MCP server (`relay mcp`, started outside the sandbox), or end your "
                "turn with the answer as your final message (the operator reads it from your rollout)")

    def durable_queue(self) -> CodexQueue:
        from relay_repl.agents.codex.queue_ops import CodexQueue

        return CodexQueue()

    def reply_route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        from relay_repl.agents.codex.provider import reply_route

        return reply_route(target, ctx)

    def reply_options(self, target: Target) -> ReplyOptions | None:
        from relay_repl.agents.codex.replies import codex_options

        return codex_options(target)

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        from relay_repl.agents.codex.replies import codex_watch

        return codex_watch(target, delivery)

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        from relay_repl.agents.codex.verify import verify_target

        return verify_target(relay_id, target, ledger)

    async def doctor_checks(self, env: Mapping[str, str]) -> list[Check]:
        from relay_repl.agents.codex.doctor import check_codex

        return await check_codex(env)

    def version_env(self) -> dict[str, str]:
        """`codex --version` writes helper links under $CODEX_HOME/tmp; with a home that cannot exist
        it warns on stderr and still prints its version (0.171.0, measured)."""
        return {"CODEX_HOME": NO_HOME}

    def fidelity(self) -> ModuleType | None:
        import relay_repl.agents.codex.fidelity as fidelity

        return fidelity

    # -- the lab (agents/codex/lab.py) ----------------------------------------------------------

    def lab(self) -> LabSpec | None:
        from relay_repl.agents.codex.lab import SPEC

        return SPEC

    def lab_files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        from relay_repl.agents.codex import lab

        return lab.files(ctx, names)

    def lab_prepare(self, ctx: LabContext, names: Sequence[str], progress: Callable[[str], object]) -> None:
        from relay_repl.agents.codex import lab

        lab.restore_packages(ctx.root, self.verified_versions()[-1], progress)

    def lab_launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        from relay_repl.agents.codex import lab

        return lab.launch(ctx, name, first)

    def lab_resume(self, ctx: LabContext, name: str, first: bool, prior: LabReady) -> LabLaunch:
        from relay_repl.agents.codex import lab

        return lab.launch(ctx, name, first, resume=prior.thread_id)

    def lab_wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        from relay_repl.agents.codex import lab

        return lab.wait(ctx, name, launch, ops, deadline)

    def lab_settled(self, ctx: LabContext, sessions: Sequence[tuple[LabReady, LabOps]], deadline: float) -> None:
        from relay_repl.agents.codex import lab

        lab.settled(ctx, sessions, deadline)

    def lab_refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        from relay_repl.agents.codex import lab

        return lab.refresh(ctx, prior, pane_pid, dead)

    def lab_revive(self, ctx: LabContext, dead: Sequence[tuple[LabReady, LabOps]], deadline: float) -> list[LabReady]:
        from relay_repl.agents.codex import lab

        return lab.revive(ctx, dead, deadline)

    def lab_outlives_panes(self, argv: Sequence[str]) -> bool:
        from relay_repl.agents.codex import lab

        return lab.outlives_panes(argv)

    def lab_stop(self, ctx: LabContext) -> None:
        from relay_repl.agents.codex import lab

        lab.stop(ctx)

    def lab_cleanup(self, ctx: LabContext) -> None:
        from relay_repl.agents.codex import lab

        lab.cleanup(ctx)
