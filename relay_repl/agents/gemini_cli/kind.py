"""Gemini CLI as one `AgentKind` (agents/kind.py): registered through the entry point `gemini-cli`
in pyproject.toml. Its capabilities load on first use (agents/capabilities.py)."""

from __future__ import annotations

from relay_repl.agents.capabilities import KindFacts, ProviderDiscovery, capability
from relay_repl.agents.gemini_cli.detail import GeminiDetail
from relay_repl.agents.gemini_cli.provider import BINARY, KIND, PREFIX
from relay_repl.agents.kind import NO_HOME, AgentKindBase, LabDriver

_HERE = "relay_repl.agents.gemini_cli"


class GeminiCliKind(AgentKindBase):
    """Gemini CLI: `gemini:NAME`, NAME the session's project (its working directory's name), or
    `<project>-<8 hex of the session id>` when several live sessions share one project. It keeps no
    provenance (a typed line is plain user input), so origin is judged from the process that
    connects, never from its chat file."""

    facts = KindFacts(
        kind=KIND, prefix=PREFIX, label="Gemini CLI", detail_model=GeminiDetail, binary=BINARY,
        npm_package="@google/gemini-cli", package=_HERE,
        address_rule=("gemini:PROJECT (the directory name the session was started in) or gemini:PROJECT-<8 hex of "
                      "its session id> when several live sessions share it"),
        mcp_setup=('~/.gemini/settings.json: "mcpServers": {"relay": {"command": "relay", "args": ["mcp"]}}',
                   '                        (with "trust": true Gemini CLI calls it without asking in the pane)'),
        # `gemini --version` writes $GEMINI_CLI_HOME/.gemini/projects.json.<uuid>.tmp (and makes .gemini/);
        # with a home that cannot exist it prints the version and writes nothing (0.61.0, measured:
        # adapters/gemini-cli.md, Gaps). GEMINI_CLI_NO_RELAUNCH: without it the wrapper starts a second node
        # only to raise its heap limit, which a `--version` does not need: 1.4-1.5 CPU-s instead of 2.4-2.5
        # (0.61.0, measured), and `relay doctor` asks it on every run
        version_env={"GEMINI_CLI_HOME": NO_HOME, "GEMINI_CLI_NO_RELAUNCH": "true"})
    discovery = capability(ProviderDiscovery, f"{_HERE}.provider:GeminiProvider")
    screen = capability(f"{_HERE}.agent:GeminiScreen")
    evidence = capability(f"{_HERE}.agent:GeminiEvidence")
    replies = capability(f"{_HERE}.replies:GeminiReplies")
    checks = capability(f"{_HERE}.verify:GeminiChecks")

    def lab_driver(self) -> LabDriver:
        from relay_repl.agents.gemini_cli.lab import GeminiLab

        return GeminiLab(self.facts)
