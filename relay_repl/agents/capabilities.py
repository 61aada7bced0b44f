"""The capabilities an agent kind offers, each a small protocol with a base holding its defaults.

Why capabilities: the layers above ask a kind one question at a time, and each question belongs to
one subject. A transport asks its `screen` and its `evidence`, a send asks its `replies`, `relay
verify` and `relay doctor` ask its `checks`, the finder asks its `discovery`, the transports'
registry its `transports`. An `AgentKind` (agents/kind.py) is these objects plus its `facts` and
its `lab_driver()`: eight members, so a new kind fills in what it has and inherits the rest.

Each base takes the kind's `KindFacts` (who it is: name, prefix, label, adapter, pinned client). A
kind names its own capability classes by `module:Class` (`capability(...)`), so their modules load
the first time one is asked, not when the kind is: the `relay targets` path imports only what
discovery needs.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.agents.adapter import AdapterSpec, TransportSpec, load_adapter
from relay_repl.agents.agent import Processes, TypedEvidence
from relay_repl.core.target import AgentDetail, Me, Target

if TYPE_CHECKING:  # annotations only: plan, check and screens load on first use, off the `relay targets` path
    from relay_repl.agents.discovery import KindProvider
    from relay_repl.agents.durable_queue import DurableQueue
    from relay_repl.core.approval import Approval
    from relay_repl.core.plan import Plan
    from relay_repl.agents.provenance import CheckedRecord, VerifyReport
    from relay_repl.agents.screens.model import Snapshot
    from relay_repl.agents.socket_wire import SocketWire
    from relay_repl.agents.turn_reply import TurnWatch
    from relay_repl.core.check import Check
    from relay_repl.core.delivery import Delivery
    from relay_repl.core.plan import ReplyContext, ReplyOptions, ReplyRoute
    from relay_repl.store.ledger import Ledger
    from relay_repl.system.panes import PaneRoster

__all__ = ["ChecksBase", "DiscoveryBase", "EvidenceBase", "KindChecks", "KindDiscovery", "KindEvidence", "KindFacts",
           "KindReplies", "KindScreen", "KindTransports", "ProviderDiscovery", "RepliesBase", "ScreenBase",
           "TransportsBase", "capability"]


@dataclass(frozen=True)
class KindFacts:
    """Who a kind is: its names, how an operator addresses it, and the client it pins."""

    kind: str
    """The kind's name, as entry points and `Target.kind` spell it: 'claude-code'."""
    prefix: str
    """What an operator types before a session's name: 'claude' (`claude:alpha`)."""
    label: str = ""
    """The client's name for humans: 'Claude Code'."""
    address_rule: str = ""
    """How an operator names one of its sessions, in words (help texts, usage errors); default PREFIX:NAME."""
    mcp_setup: tuple[str, ...] = ()
    """How its client is told to start the relay MCP server (`relay mcp --help` shows these lines)."""
    detail_model: type[AgentDetail] = AgentDetail
    """The pydantic model of `Target.detail` for this kind (a frozen `core.target.AgentDetail`)."""
    binary: str = ""
    """Its client's executable on PATH (`pin`)."""
    npm_package: str = ""
    """The npm package that installs it (`pin`)."""
    version_env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for `<binary> --version` so asking the version writes nothing (a client that keeps
    files under its home even then is pointed at `kind.NO_HOME`)."""
    package: str = ""
    """The kind's Python package, where its `npm-lock.json` and `fidelity.py` lie (default: none)."""
    adapter_spec: AdapterSpec | None = None
    """Its adapter block itself, for a kind with no adapters/<kind>.md (a test double); else read from there."""

    def __post_init__(self) -> None:
        if not self.address_rule:
            object.__setattr__(self, "address_rule", f"{self.prefix}:NAME")
        if not self.label:
            object.__setattr__(self, "label", self.kind)

    def adapter(self) -> AdapterSpec:
        """Its adapter file's validated toml block (adapters/<kind>.md)."""
        return self.adapter_spec if self.adapter_spec is not None else load_adapter(self.kind)

    def verified_versions(self) -> tuple[str, ...]:
        """Versions relay_repl's knowledge of this kind was measured on (its adapter file), oldest first."""
        return tuple(self.adapter().verified_versions)

    def pin(self) -> ClientPin:
        """Its client (`binary`, `npm_package`) at the newest version its adapter verified."""
        if not (self.binary and self.npm_package):
            raise NotImplementedError(f"agent kind {self.kind!r} names no client to install")
        return ClientPin(binary=self.binary, npm_package=self.npm_package, version=self.verified_versions()[-1])

    def npm_lock(self) -> dict[str, Any] | None:
        """The npm lockfile entries (`packages`, lockfile v3) its pinned client installs, every transitive
        version fixed: `npm-lock.json` in its package, or None. The lab merges the kinds' entries."""
        from importlib import resources  # here: ~10 ms of imports (tempfile, zipfile...) that only the lab installer needs

        if not self.package:
            return None
        try:
            loaded = json.loads(resources.files(self.package).joinpath("npm-lock.json").read_text())
        except (OSError, ValueError, ModuleNotFoundError):
            return None
        return loaded if isinstance(loaded, dict) else None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built on first use, off the targets path


class ClientPin(_Frozen):
    """The client the lab installs and the version gate names: one per kind, in its package."""

    binary: str = Field(description="the executable on PATH, e.g. 'claude'")
    npm_package: str = Field(description="the npm package that installs it, e.g. '@anthropic-ai/claude-code'")
    version: str = Field(description="the pinned version (the newest of the adapter's verified_versions)")

    @property
    def install_hint(self) -> str:
        """The one command that installs the pinned client system-wide."""
        return f"npm i -g {self.npm_package}@{self.version}"


class FidelityFact(_Frozen):
    """One reverse-engineered fact about a kind's client that relay depends on, and the live checks
    (`relay fidelity`, lab/fidelity/checks.py) that prove it. A fact two kinds share is declared by
    both with the same `fact` text; `relay fidelity` reports it once, for both."""

    fact: str
    paths: str = Field(description="which relay paths rely on it (what stays refused when it fails)")
    checks: tuple[str, ...] = Field(description="GROUP:CHECK names (checks.all_checks()); a [param] suffix is one case")


@runtime_checkable
class InboxListing(Protocol):
    """The operator's inbox listed as a peer in one kind's registry: planned, written only under
    the gate's approval of `plan()`, removed when the inbox closes."""

    name: str
    """The name the kind's sessions see the inbox under."""
    socket_path: Path
    """Where the inbox must listen for the kind's sessions to reach it."""

    def plan(self) -> Plan:
        """The plan the gate shows (what is written where, and why)."""
        ...

    def write(self, approval: Approval | None = None) -> None:
        """Write the listing (refuses without a live approval of `plan()`)."""
        ...

    def remove(self) -> None:
        """Remove what `write` wrote (idempotent)."""
        ...

    def files(self) -> tuple[Path, ...]:
        """The files `write` creates, which the inbox owns and removes at exit."""
        ...


# -- the protocols --------------------------------------------------------------------------------


class KindDiscovery(Protocol):
    """Finding its sessions, and ours among them."""

    def providers(self, env: Mapping[str, str], panes: PaneRoster) -> Sequence[KindProvider]:
        """Its discovery providers, configured from `env`, sharing `panes` (one tmux listing per refresh)."""
        ...

    def own_address(self, env: Mapping[str, str]) -> Me | None:
        """Our own address when this process runs inside one of its sessions, else None."""
        ...

    def sandbox_note(self, env: Mapping[str, str]) -> str | None:
        """When `env` says this process runs inside the kind's sandbox, what an operator-facing error
        should add (the routes that still reach the inbox from there), else None."""
        ...


class KindScreen(Protocol):
    """Its pane, as the tmux transport reads it and types into it."""

    busy_submit: str
    """What one Enter does to a busy receiver, in words."""
    tab_queues_when_busy: bool
    """Whether one Tab may queue a line that Enter left beside `tab to queue message`."""
    tmux_lead: int
    """How many leading characters of a typed payload go alone, one at a time and each seen drawn,
    before the rest: a client that reads a burst of keys against its composer as last drawn (Gemini:
    `?` and `!` on an "empty" composer) would otherwise take them as commands."""

    def classifier(self) -> ModuleType | None:
        """The screen classifier module for this kind's TUI, or None (then never type)."""
        ...

    def ui_mode_chars(self) -> str:
        """First characters that open a UI mode in its composer instead of entering text."""
        ...

    def tmux_busy_note(self, target: Target) -> str | None:
        """A plan note on what typing does to this target in its current state, or None."""
        ...

    def roster_mismatch(self, target: Target, snap: Snapshot, processes: Processes, screen: ModuleType) -> str | None:
        """Why the pane in `snap` no longer runs `target`'s process, or None (blocking)."""
        ...

    def waiting_refusal(self, target: Target) -> str | None:
        """Why the agent's own state forbids typing now (a dialog waiting), or None (blocking)."""
        ...


class KindEvidence(Protocol):
    """The receiver's own record: where it is and what a typed line left there."""

    evidence_name: str
    """What the receiver's evidence file is called in messages ("transcript", "rollout")."""

    def evidence_file(self, target: Target) -> Path | None:
        """The file where the receiver records what it took, re-derived each time (blocking)."""
        ...

    def typed_evidence(self, path: Path, offset: int, payload: str) -> TypedEvidence:
        """What `path` (from byte `offset`) says about the typed `payload` (blocking)."""
        ...

    def tmux_delivered_when(self) -> str:
        """The receiver evidence that counts as delivered for a typed line, in words."""
        ...


class KindReplies(Protocol):
    """How its sessions answer: the routes, the turn reply, and the operator's inbox as its peer."""

    answers_listed_inbox: bool
    """True when its sessions answer natively only to a peer listed in its own registry (so a
    want=reply step lists the operator's inbox first, through `inbox_listing`)."""

    def route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        """How `target` will answer a want=reply|ack message (the plan's words and whether it can)."""
        ...

    def options(self, target: Target) -> ReplyOptions | None:
        """What `target` can answer through (relay reply / mcp / turn reply), or None (unknown)."""
        ...

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        """A reader of the turn `delivery` started in `target` (its turn reply), or None."""
        ...

    def inbox_listing(self, name: str, pins: dict[str, Any] | None = None) -> InboxListing | None:
        """The operator's inbox listed as a peer under `name` (not yet written), or None when the kind
        has no peer registry (blocking; raises a RelayError when listing is impossible now). `pins`: the
        random and clock values a plain phase drew for the plan it showed (None: drawn now)."""
        ...

    def listed_peer_name(self, address: str) -> str | None:
        """The name under which the sender `address` is listed in this kind's own peer registry, or
        None. The lab's stub model asks this before it scripts a native reply to that sender."""
        ...


class KindChecks(Protocol):
    """What `relay verify`, `relay doctor` and `relay fidelity` ask of it (all read-only)."""

    provenance: Literal["kernel", "none"]
    """'kernel': its records carry kernel-supplied provenance (verifiedPeerPid) `relay verify` checks;
    'none': a typed or queued message is plain user input, so origin is never proven from its record."""

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        """`relay verify ID --in target`: what `target`'s own record proves about who sent `relay_id`."""
        ...

    def verify_file(self, relay_id: str, path: Path, ledger: Ledger | None) -> VerifyReport | None:
        """`relay verify ID --transcript FILE`: audit a loose file of this kind, or None (it audits none)."""
        ...

    def origin_records(self, relay_id: str, target: Target,
                       ledger: Ledger | None) -> tuple[list[CheckedRecord], str, int, int] | None:
        """For `relay verify ID` over every live target: (judged records, source, bytes scanned,
        oversized lines) of `target`'s record, or None (no record yet, or no provenance kept)."""
        ...

    async def doctor(self, env: Mapping[str, str]) -> list[Check]:
        """`relay doctor` rows for this kind beyond the client version: its registry/home, daemons, config."""
        ...

    def fidelity(self) -> ModuleType | None:
        """Its fidelity module (agents/<kind>/fidelity.py): `FACTS` and the per-kind helpers the lab's
        live checks use (`COMPOSER_END_KEY`, `tmux_unconfirmed(...)`), or None."""
        ...

    def fidelity_facts(self) -> tuple[FidelityFact, ...]:
        """The facts about its client `relay fidelity` checks live (none: fidelity covers none of it)."""
        ...


class KindTransports(Protocol):
    """The transports it offers, and the facts the generic socket and queue transports need."""

    def specs(self) -> tuple[TransportSpec, ...]:
        """The transports it offers, each with what it needs (capability flags, `when`)."""
        ...

    def socket_wire(self) -> SocketWire | None:
        """Its sessions' messaging socket, for the socket transports (agents/socket_wire.py), or None."""
        ...

    def durable_queue(self) -> DurableQueue | None:
        """Its threads' durable queue, for the queue transport (agents/durable_queue.py), or None."""
        ...


# -- the bases: "this kind offers nothing there" ---------------------------------------------------


class _Of:
    def __init__(self, facts: KindFacts) -> None:
        self.facts = facts

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.facts.kind}>"


class DiscoveryBase(_Of):
    def providers(self, env: Mapping[str, str], panes: PaneRoster) -> Sequence[KindProvider]:
        raise NotImplementedError(f"agent kind {self.facts.kind!r} has no discovery")

    def own_address(self, env: Mapping[str, str]) -> Me | None:
        return None

    def sandbox_note(self, env: Mapping[str, str]) -> str | None:
        return None


class ProviderDiscovery(DiscoveryBase):
    """Discovery by one provider class (`provider = "module:Class"`, loaded on first use), built as
    `Class(env=env, panes=panes)`, whose `own_address()` says whether we run inside one of its sessions."""

    def __init__(self, facts: KindFacts, provider: str) -> None:
        super().__init__(facts)
        self.provider = provider

    def _cls(self) -> Any:
        return load_ref(self.provider)

    def providers(self, env: Mapping[str, str], panes: PaneRoster) -> Sequence[KindProvider]:
        return [self._cls()(env=env, panes=panes)]

    def own_address(self, env: Mapping[str, str]) -> Me | None:
        me = self._cls()(env=env).own_address()
        return me if me is None or isinstance(me, Me) else None


class ScreenBase(_Of):
    busy_submit: str = "unknown: never typed while busy"
    tab_queues_when_busy: bool = False
    tmux_lead: int = 0

    def classifier(self) -> ModuleType | None:
        from relay_repl.agents import screens

        try:
            return screens.for_kind(self.facts.kind)
        except Exception:  # no classifier for this kind: never type into it
            return None

    def ui_mode_chars(self) -> str:
        return self.facts.adapter().screen.ui_mode_chars

    busy_note: str | None = None
    """What typing does to it while busy (a plan note), or None: `tmux_busy_note` gives it for a busy target."""

    def tmux_busy_note(self, target: Target) -> str | None:
        return self.busy_note if target.state == "busy" else None

    def roster_mismatch(self, target: Target, snap: Snapshot, processes: Processes, screen: ModuleType) -> str | None:
        if snap.pane_pid != target.pid:
            return f"pane {snap.pane_id} runs pid {snap.pane_pid}, not the target's {target.pid}"
        return None

    def waiting_refusal(self, target: Target) -> str | None:
        return None

    def is_client(self, argv: list[str]) -> bool:
        """Whether a process (its argv) is this kind's client: asked by `pane_processes`."""
        return False

    def pane_processes(self, snap: Snapshot, processes: Processes) -> tuple[set[int], list[tuple[int, list[str]]]] | str:
        """For a kind whose client runs below the pane's shell or wrapper (its roster rule cannot
        compare the pane's pid): every pid under the pane and the (pid, argv) of its clients
        among them, or why there is nothing to look under."""
        if snap.pane_pid is None:
            return "pane has no pid"
        procs = processes(snap.pane_pid)
        return {pid for pid, _ in procs}, [(pid, argv) for pid, argv in procs if self.is_client(argv)]


class EvidenceBase(_Of):
    evidence_name: str = "record"

    def evidence_file(self, target: Target) -> Path | None:
        """The record discovery named (`target.evidence_file`) while it still exists, else the
        kind's own search (`find_evidence_file`): a path read at discovery may have been rotated."""
        if target.evidence_file and Path(target.evidence_file).is_file():
            return Path(target.evidence_file)
        return self.find_evidence_file(target)

    def find_evidence_file(self, target: Target) -> Path | None:
        """The kind's search for `target`'s record when discovery named none that exists (none by default)."""
        return None

    def typed_evidence(self, path: Path, offset: int, payload: str) -> TypedEvidence:
        return TypedEvidence(state="none")

    def tmux_delivered_when(self) -> str:
        return f"its {self.evidence_name} gains a typed record carrying exactly this line"


class RepliesBase(_Of):
    answers_listed_inbox: bool = False

    def route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        from relay_repl.core.plan import relay_reply_route
        from relay_repl.core.reply_words import IDENTIFIED

        return relay_reply_route(target.spec, ctx, IDENTIFIED)

    def options(self, target: Target) -> ReplyOptions | None:
        return None

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        return None

    def inbox_listing(self, name: str, pins: dict[str, Any] | None = None) -> InboxListing | None:
        return None

    def listed_peer_name(self, address: str) -> str | None:
        return None


class ChecksBase(_Of):
    provenance: Literal["kernel", "none"] = "none"

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        from relay_repl.agents.provenance import VerifyReport

        label = self.facts.label
        return VerifyReport(relay_id=relay_id, source=f"{label} keeps no record relay reads", target=target.spec,
                            kind=self.facts.kind, verdict="no provenance",
                            summary=f"{label} keeps no provenance: a message is plain user input to the model; the "
                                    "envelope's from= is a convention, not evidence")

    def verify_file(self, relay_id: str, path: Path, ledger: Ledger | None) -> VerifyReport | None:
        return None

    def origin_records(self, relay_id: str, target: Target,
                       ledger: Ledger | None) -> tuple[list[CheckedRecord], str, int, int] | None:
        return None

    async def doctor(self, env: Mapping[str, str]) -> list[Check]:
        return []

    def fidelity(self) -> ModuleType | None:
        """`<package>.fidelity` when the kind's package has one."""
        if not self.facts.package:
            return None
        name = f"{self.facts.package}.fidelity"
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the module exists and itself failed to import: say so, do not hide it
                raise
            return None

    def fidelity_facts(self) -> tuple[FidelityFact, ...]:
        mod = self.fidelity()
        return tuple(getattr(mod, "FACTS", ())) if mod is not None else ()


class TransportsBase(_Of):
    def specs(self) -> tuple[TransportSpec, ...]:
        return tuple(self.facts.adapter().transports)

    def socket_wire(self) -> SocketWire | None:
        return None

    def durable_queue(self) -> DurableQueue | None:
        return None


# -- naming a capability lazily ----------------------------------------------------------------------

def load_ref(ref: str) -> Any:
    """The object `module:attribute` names (its module imported now)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def capability(made_from: type | str, *args: Any) -> Any:
    """A kind's capability, made on first use from its class (or `module:Class`, so its module loads
    only then) as `Class(kind.facts, *args)`, and kept on the kind. Typed as the member it is
    assigned to (`AgentKind.screen: KindScreen`, ...)."""
    return _Capability(made_from, args)


class _Capability:
    def __init__(self, made_from: type | str, args: tuple[Any, ...]) -> None:
        self.made_from, self.args = made_from, args
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        cls = load_ref(self.made_from) if isinstance(self.made_from, str) else self.made_from
        made = cls(obj.facts, *self.args)
        obj.__dict__[self.name] = made  # kept: the next read finds the instance's own attribute
        return made
