"""A fourth agent kind that exists only for the tests: a distribution installed beside
relay_repl (its `relay_fake_agent-0.dist-info/entry_points.txt` names it in the group
`relay_repl.agents`), with a replay double for discovery. Nothing in relay_repl names it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from relay_repl.agents.adapter import AdapterSpec
from pathlib import Path

from relay_repl.agents.capabilities import ChecksBase, DiscoveryBase, KindFacts, ScreenBase, capability
from relay_repl.agents.kind import (AgentKindBase, Check, LabContext, LabDriverBase, LabLaunch, LabPane, LabReady,
                                   LabSpec)
from relay_repl.core.target import Target

KIND = "fake-agent"
PREFIX = "fakey"
VERSION = "0.0.1"


class ReplayProvider:
    """Discovery replayed from `$RELAY_FAKE_AGENT_PANE` (a real tmux pane id the test made)."""

    kind = KIND

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)

    async def discover(self) -> list[Target]:
        return [Target(kind=KIND, prefix=PREFIX, name="one", address="fake-one", pid=os.getpid(), live=True,
                       state="idle", pane=self.env.get("RELAY_FAKE_AGENT_PANE") or "%999", transports=("tmux",),
                       identified_by="the fake agent's replay double", client_version=VERSION)]

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> Any:
        return None

    def claimed_session(self, address: str) -> str | None:
        return None


class FakeScreen(ScreenBase):
    def classifier(self) -> Any:
        """Its screen classifier: this module (`classify`), which never reads a screen as typable."""
        return sys.modules[__name__]


class FakeDiscovery(DiscoveryBase):
    def providers(self, env: Mapping[str, str], panes: Any) -> Sequence[ReplayProvider]:
        return [ReplayProvider(env)]


class FakeChecks(ChecksBase):
    async def doctor(self, env: Mapping[str, str]) -> list[Check]:
        return [Check(name="fake agent registry", ok=True, detail="the replay double answers")]


class FakeLab(LabDriverBase):
    """`relay lab up --fakey N` runs a stand-in (a shell that says it is ready, then waits)."""

    spec = LabSpec(count_flag="fakey", default_count=0, stub_api="openai", help="Fake Agent sessions")

    def files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        return {ctx.home / ".fake-agent" / "sessions.txt": "".join(f"{n} {ctx.base_urls[n]}\n" for n in names)}

    def launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        return LabLaunch(command=("/bin/sh", "-c", f"echo fake agent {name} ready; exec sleep 3600"),
                         env={"FAKE_AGENT_BASE_URL": ctx.base_urls[name]})

    def ready(self, ctx: LabContext, name: str, pane: LabPane) -> LabReady | None:
        if f"fake agent {name} ready" not in pane.screen:
            return None
        return LabReady(pid=pane.pane_pid, address=f"fake-{name}", note=f"fake agent pid {pane.pane_pid} ready")


class FakeAgentKind(AgentKindBase):
    """A new kind from outside relay_repl: its facts, four capabilities and a lab driver (the rest default)."""

    facts = KindFacts(kind=KIND, prefix=PREFIX, label="Fake Agent", binary="fake-agent", npm_package="relay-fake-agent",
                      adapter_spec=AdapterSpec.model_validate({
                          "kind": KIND, "prefix": PREFIX, "verified_versions": [VERSION], "facts": "tests only",
                          "registry": {"env": "RELAY_FAKE_AGENT_HOME", "default": "~/.fake-agent"},
                          "transports": [{"name": "tmux", "live_only": True, "needs_pane": True}],
                          "screen": {"ui_mode_chars": "/", "classifier": "none"},
                      }))
    discovery = capability(FakeDiscovery)
    screen = capability(FakeScreen)
    checks = capability(FakeChecks)

    def lab_driver(self) -> LabDriverBase:
        return FakeLab(self.facts)


def classify(snapshot: Any) -> Any:
    """The replay double's classifier: every screen is unknown, so nothing is ever typed."""
    from relay_repl.agents.screens.model import ScreenReading

    return ScreenReading(kind="unknown", composer="unknown", reasons=["the fake agent's screen is never classified"])
