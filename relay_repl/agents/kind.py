"""`AgentKind`: everything about one agent kind, behind one protocol (issue 19).

Why one protocol: adding an agent must not mean editing the session, the transports,
the doctor, the verifier and the lab. An agent package (`relay_repl/agents/<kind>/`, or
any distribution installed beside relay_repl) provides one object implementing this
protocol and names it in the entry-point group `relay_repl.agents`:

    [project.entry-points."relay_repl.agents"]
    claude-code = "relay_repl.agents.claude_code.kind:ClaudeCodeKind"

`relay_repl.agents.registry` loads that group; everything above the agents layer asks
the registry (`kinds()`, `kind_for(name)`) and never names a kind.

The protocol extends `Agent` (what the transports already ask: screen classifier,
roster rule, evidence file and what in it counts). Subclass `AgentKindBase` rather than
implementing the protocol from scratch: it holds a default for every method that has a
sensible one, so methods added to the protocol later (additively) do not break a kind.

Methods, by subject:
- identity and addresses: `kind`, `prefix` (what an operator types before the name,
  `claude` in `claude:alpha`), `label` (for humans), `address_rule()` (in words);
- discovery: `providers(env, panes)` -> objects with `kind`, `async discover()`, and for
  judging an inbox message's origin `identify_process(pid, below)`, `claimed_session(address)`
  (and optionally `prove_thread(ident, call)`, see agents/origin.py); `own_address(env)`:
  our own `Me` when this process runs inside one of its sessions; `sandbox_note(env)`: what an
  error adds when this process runs inside its sandbox (which routes still reach the inbox);
- transports: `transports()` (the adapter's TransportSpec list: name, capability flags,
  when it applies); `socket_wire()` / `durable_queue()` (the facts the generic socket and
  queue transports need, or None); `screen()` (the classifier module), `ui_mode_chars()` (first characters
  that open a UI mode in its composer: a typed line must not start with one), the `Agent` members;
- evidence: `evidence_file(target)`, `typed_evidence(path, offset, payload)` (from `Agent`);
- replies: `reply_route(target, ctx)` (how it will answer a want=reply|ack message),
  `reply_options(target)` (relay-reply / mcp / turn, each with evidence), `turn_watch(target,
  delivery)` (a reader of the turn reply in its own record); `provenance` says whether its
  record carries kernel-supplied provenance ("kernel") or none ("none": a typed or queued
  message is plain user input); `verify(relay_id, target, ledger)`, `verify_file(...)` and
  `origin_records(...)`: `relay verify` on its own record (agents/provenance.py judges);
- `relay doctor`: `doctor_checks(env)` -> `Check` rows (async; read-only);
- versions and install: `pin()` (binary, npm package, pinned version the lab installs),
  `verified_versions()` (from its adapter file);
- the lab: `lab()` -> `LabSpec` (count flag for `relay lab up --<flag> N`, default count,
  which stub API it talks to) or None when the lab cannot run it offline;
  `lab_files(ctx, names)`, `lab_launch(ctx, name, first)`, `lab_ready(ctx, name, pane)`:
  the config files it needs, the command and environment a lab pane runs, and when a
  started session counts as ready (polled by the default `lab_wait`); a kind that needs more
  overrides `lab_prepare` (before its sessions start), `lab_wait` (drives its pane through
  `LabOps`), `lab_settled` (once all are up), `lab_resume` (a restart), `lab_revive` (back
  without a restart), `lab_refresh` and `lab_status` (`relay lab status`, the lab's helpers),
  `lab_outlives_panes`, `lab_stop` and `lab_cleanup` (`relay lab down`); its LabSpec names its
  client home, environment, key variables, socket depth and whether its sessions start serially;
- typed detail: `detail_model` (the pydantic model of `Target.detail` for this kind);
- the operator's inbox as a peer: `answers_listed_inbox` (its sessions answer natively only to a
  peer listed in its own registry) and `inbox_listing(name)` (the gated listing, or None).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.agents.adapter import AdapterSpec, TransportSpec, load_adapter
from relay_repl.agents.agent import Agent, Processes, TypedEvidence
from relay_repl.core.target import AgentDetail, Me, Target

if TYPE_CHECKING:  # annotations only: plan, check and screens load on first use, off the `relay targets` path
    from relay_repl.agents.screens.model import ScreenReading, Snapshot
    from relay_repl.core.check import Check
    from relay_repl.core.plan import Plan, ReplyContext, ReplyOptions, ReplyRoute
    from relay_repl.store.ledger import Ledger
    from relay_repl.core.delivery import Delivery
    from relay_repl.core.approval import Approval
    from relay_repl.agents.provenance import CheckedRecord, VerifyReport
    from relay_repl.agents.discovery import KindProvider
    from relay_repl.agents.turn_reply import TurnWatch
    from relay_repl.agents.socket_wire import SocketWire
    from relay_repl.agents.durable_queue import DurableQueue
    from relay_repl.system.panes import PaneRoster

__all__ = ["AgentKind", "AgentKindBase", "Check", "ClientPin", "FidelityFact", "InboxListing", "LabContext", "LabLaunch", "LabOps", "LabPane", "LabReady",
           "LabSpec", "NoDetail"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built on first use, off the targets path


LAB_HOME = "home"
"""The lab's $HOME, as a directory under the lab root (`<lab>/home`): a `LabSpec.homes` value for a
client whose home is $HOME itself (its state under `$HOME/.<client>`)."""

NO_HOME = "/dev/null/relay-version"
"""A client home no process can create (its parent is not a directory): a kind's `version_env`
points its home here, so `--version` writes nowhere (issue 16 case 8)."""


class ClientPin(_Frozen):
    """The client the lab installs and the version gate names: one per kind, in its package."""

    binary: str = Field(description="the executable on PATH, e.g. 'claude'")
    npm_package: str = Field(description="the npm package that installs it, e.g. '@anthropic-ai/claude-code'")
    version: str = Field(description="the pinned version (the newest of the adapter's verified_versions)")

    @property
    def install_hint(self) -> str:
        """The one command that installs the pinned client system-wide."""
        return f"npm i -g {self.npm_package}@{self.version}"


class LabSpec(_Frozen):
    """How `relay lab up` offers this kind."""

    count_flag: str = Field(description="`relay lab up --<count_flag> N`, e.g. 'claude'")
    default_count: int = Field(default=1, ge=0, description="sessions `relay lab up` starts when the flag is omitted")
    stub_api: str = Field(description="the stub model API its sessions talk to (lab/stubs): 'anthropic', 'openai', ...")
    help: str = ""
    homes: dict[str, str] = Field(default_factory=dict, description=(
        "variable -> directory under the lab root (its client's home there, e.g. CODEX_HOME -> 'codex'): the "
        "lab creates it, sets it for every lab process, exports it in `relay lab env`, passes it to `relay "
        "mcp`, counts a process of its binary with that variable as the lab's, and removes it at `down`; "
        "LAB_HOME names the lab's $HOME itself, for a client that keeps its state there"))
    env: dict[str, str] = Field(default_factory=dict, description="constant variables of every lab process "
                                "(no updater, no telemetry)")
    key_env: tuple[str, ...] = Field(default=(), description="variables every lab process gets holding the lab's "
                                     "fake API key")
    sockets: tuple[tuple[str, str], ...] = Field(default=(), description=(
        "(longest path under the lab root one of its unix sockets takes, what it is): `up` refuses a lab "
        "directory too deep for it"))
    serial: bool = Field(default=False, description=(
        "its sessions start one at a time, each once the one before is ready (its clients share state a "
        "starting one disturbs); the others start together"))


class FidelityFact(_Frozen):
    """One reverse-engineered fact about a kind's client that relay depends on, and the live checks
    (`relay fidelity`, lab/fidelity/checks.py) that prove it. A fact two kinds share is declared by
    both with the same `fact` text; `relay fidelity` reports it once, for both."""

    fact: str
    paths: str = Field(description="which relay paths rely on it (what stays refused when it fails)")
    checks: tuple[str, ...] = Field(description="GROUP:CHECK names (checks.all_checks()); a [param] suffix is one case")


class LabContext(_Frozen):
    """What the lab tells a kind about the lab it is starting (paths are the lab's own)."""

    root: Path = Field(description="the lab directory")
    home: Path = Field(description="$HOME of every lab client")
    bin_dir: Path = Field(description="where the pinned clients' executables are")
    logs: Path
    api_key: str = Field(description="the fake API key the stubs accept")
    mcp_command: tuple[str, ...] = Field(description="argv that runs `relay mcp` against this lab")
    mcp_env: dict[str, str] = Field(default_factory=dict, description="the environment `relay mcp` needs there "
                                    "(RELAY_HOME, PATH, the clients' homes): clients start MCP servers with little")
    base_urls: dict[str, str] = Field(default_factory=dict, description="session name -> its stub's base URL")
    env: dict[str, str] = Field(default_factory=dict, description="the full environment of every lab process")
    mcp_server: str = Field(default="relay", description="the relay MCP server's name in a client's config: its "
                            "tools reach the model as mcp__relay__relay_reply, mcp__relay__relay_requests, ... relay_send, "
                            "relay_request_status")
    run_prefix: tuple[str, ...] = Field(default=(), description=(
        "argv prefix that runs a command inside the lab's network namespace (empty: the host's)"))

    def workdir(self, name: str) -> Path:
        return self.root / "work" / name


class LabLaunch(_Frozen):
    """The command one lab pane runs and the environment it adds (first start and restarts alike)."""

    command: tuple[str, ...]
    env: dict[str, str] = Field(default_factory=dict)
    unset: tuple[str, ...] = Field(default=(), description=(
        "variables the pane must NOT inherit (e.g. Gemini CLI runs headless under CI=true); the lab "
        "starts the command under `env -u NAME ...`"))
    known: tuple[str, ...] = Field(default=(), description=(
        "addresses that existed before this start, read by `lab_launch` (a fresh session's own is the one "
        "not among them): `lab_wait` is handed this launch"))
    resumes: str | None = Field(default=None, description="the address this start resumes (a restart of the "
                                "same conversation), else None")

    def argv(self) -> list[str]:
        """The command with `unset` applied: `env -u A -u B cmd...` (env execs, so the pid is the client's)."""
        if not self.unset:
            return list(self.command)
        return ["env", *[a for name in self.unset for a in ("-u", name)], *self.command]


class LabPane(_Frozen):
    """What the launcher sees of a started session's pane, each time it polls."""

    pane_id: str
    pane_pid: int
    screen: str = Field(description="the pane's capture (plain text)")


class LabReady(_Frozen):
    """A started lab session, ready: how the lab records it."""

    pid: int | None = None
    address: str | None = Field(default=None, description="session id / thread id, as its kind addresses it")
    evidence_file: str | None = None
    note: str = Field(default="", description="the progress line, e.g. 'claude pid 42 registered, idle'")
    extra: dict[str, str] = Field(default_factory=dict)
    focus_in: bool = Field(default=False, description="the lab's tmux (focus-events on, no client attached) leaves "
                           "the pane unfocused and this client then draws no cursor: the lab sends it a focus-in "
                           "report (ESC [ I), as a terminal an operator looks at would, and waits until the "
                           "product's own screen reading can type into it")
    proc_start: str | None = Field(default=None, description="the client's own record of its start (else the lab "
                                   "reads /proc)")
    socket: str | None = Field(default=None, description="the socket the session listens on, if any")
    thread_id: str | None = Field(default=None, description="the conversation a shared daemon hosts, if any")
    daemon_pid: int | None = None
    provider: str | None = Field(default=None, description="the model provider the session selects, if named")
    name: str | None = Field(default=None, description="the session's name now (its client may rename it)")
    alive: bool = True


class LabOps(Protocol):
    """What the lab lets a kind do with one of its started panes while it waits (agents/ may not import
    the lab: the lab hands these in)."""

    name: str

    def pane(self) -> tuple[str, int]:
        """(pane id, pane pid) now; raises LabError when the pane is gone or its process exited."""
        ...

    def capture(self) -> str:
        """The pane's text now."""
        ...

    def reading(self) -> ScreenReading | None:
        """The product's own reading of the pane (the kind's classifier), or None."""
        ...

    def keys(self, *keys: str, literal: bool = False) -> None:
        """tmux send-keys to the pane (`literal`: the text as typed)."""
        ...

    def progress(self, line: str) -> None:
        """One progress line for the operator."""
        ...


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


NoDetail = AgentDetail
"""The detail of a kind that keeps none beyond the common Target fields."""


@runtime_checkable
class AgentKind(Agent, Protocol):
    """One agent kind: discovery, transports, screen, evidence, replies, doctor, versions, lab."""

    kind: str
    """The kind's name, as entry points and `Target.kind` spell it: 'claude-code'."""
    prefix: str
    """What an operator types before a session's name: 'claude' (`claude:alpha`)."""
    label: str
    """The client's name for humans: 'Claude Code'."""
    mcp_setup: tuple[str, ...]
    """How its client is told to start the relay MCP server (`relay mcp --help` shows these lines,
    each kind's below the other's): e.g. `Claude Code:            claude mcp add relay -- relay mcp`."""
    provenance: Literal["kernel", "none"]
    """'kernel': its records carry kernel-supplied provenance (verifiedPeerPid) `relay verify` checks;
    'none': a typed or queued message is plain user input, so origin is never proven from its record."""
    detail_model: type[AgentDetail]
    """The pydantic model of `Target.detail` for this kind (a frozen `core.target.AgentDetail`)."""
    answers_listed_inbox: bool
    """True when its sessions answer natively only to a peer listed in its own registry (so a
    want=reply step lists the operator's inbox first, through `inbox_listing`)."""

    def adapter(self) -> AdapterSpec:
        """Its adapter file's validated toml block (adapters/<kind>.md)."""
        ...

    def address_rule(self) -> str:
        """How an operator names one of its sessions, in words (help texts, usage errors)."""
        ...

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

    def transports(self) -> tuple[TransportSpec, ...]:
        """The transports it offers, each with what it needs (capability flags, `when`)."""
        ...

    def ui_mode_chars(self) -> str:
        """First characters that open a UI mode in its composer instead of entering text."""
        ...

    def socket_wire(self) -> SocketWire | None:
        """Its sessions' messaging socket, for the socket transports (agents/socket_wire.py), or None."""
        ...

    def durable_queue(self) -> DurableQueue | None:
        """Its threads' durable queue, for the queue transport (agents/durable_queue.py), or None."""
        ...

    def reply_route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        """How `target` will answer a want=reply|ack message (the plan's words and whether it can)."""
        ...

    def reply_options(self, target: Target) -> ReplyOptions | None:
        """What `target` can answer through (relay reply / mcp / turn reply), or None (unknown)."""
        ...

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        """A reader of the turn `delivery` started in `target` (its turn reply), or None."""
        ...

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

    async def doctor_checks(self, env: Mapping[str, str]) -> list[Check]:
        """`relay doctor` rows for this kind beyond the client version: its registry/home, daemons, config."""
        ...

    def pin(self) -> ClientPin:
        """The pinned client: binary, npm package, version (the lab installer asks each kind)."""
        ...

    def npm_lock(self) -> dict[str, Any] | None:
        """The npm lockfile entries (`packages`, lockfile v3) its pinned client installs, every
        transitive version fixed: `npm-lock.json` in its package, or None. The lab merges the
        kinds' entries into the one package-lock.json it installs with."""
        ...

    def version_env(self) -> dict[str, str]:
        """Variables set for `<binary> --version` so asking the version writes nothing (a client
        that keeps files under its home even then is pointed at `NO_HOME`)."""
        ...

    def verified_versions(self) -> tuple[str, ...]:
        """Versions relay_repl's knowledge of this kind was measured on (its adapter file), oldest first."""
        ...

    def inbox_listing(self, name: str) -> InboxListing | None:
        """The operator's inbox listed as a peer under `name` (not yet written), or None when the kind
        has no peer registry (blocking; raises a RelayError when listing is impossible now)."""
        ...

    def listed_peer_name(self, address: str) -> str | None:
        """The name under which the sender `address` is listed in this kind's own peer registry
        (as its sessions see it), or None when it is not listed or the kind has no such registry.
        The lab's stub model asks this before it scripts a native reply to that sender."""
        ...

    def lab(self) -> LabSpec | None:
        """How `relay lab up` offers it, or None when the lab cannot run it offline."""
        ...

    def fidelity(self) -> ModuleType | None:
        """Its fidelity module (agents/<kind>/fidelity.py): `FACTS` and the per-kind helpers the lab's
        live checks use (`COMPOSER_END_KEY`, `tmux_unconfirmed(...)`), or None."""
        ...

    def fidelity_facts(self) -> tuple[FidelityFact, ...]:
        """The facts about its client `relay fidelity` checks live (none: fidelity covers none of it)."""
        ...

    def lab_files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        """Config files (path -> text) its lab sessions `names` need before any starts."""
        ...

    def lab_launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        """The command and environment of lab session `name` (`first`: the first of its kind)."""
        ...

    def lab_ready(self, ctx: LabContext, name: str, pane: LabPane) -> LabReady | None:
        """Polled after start: the ready session, or None while it is still starting (blocking, quick)."""
        ...

    def lab_prepare(self, ctx: LabContext, names: Sequence[str], progress: Callable[[str], object]) -> None:
        """Before its lab sessions `names` start (after `lab_files`): e.g. restore a cache."""
        ...

    def lab_resume(self, ctx: LabContext, name: str, first: bool, prior: LabReady) -> LabLaunch:
        """The command that restarts dead lab session `name` (`prior`: what the lab recorded of it)."""
        ...

    def lab_wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        """Wait until the session just started with `launch` is ready (raises LabError at `deadline`)."""
        ...

    def lab_settled(self, ctx: LabContext, sessions: Sequence[tuple[LabReady, LabOps]], deadline: float) -> None:
        """Once every lab session of every kind is ready: confirm its own still are (raises LabError)."""
        ...

    def lab_refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        """`relay lab status`: a lab session as it is now (`dead`: its pane's process exited)."""
        ...

    def lab_status(self, ctx: LabContext, prior: LabReady) -> str | None:
        """What the session's own record says it is doing ('idle', 'busy', ...), or None when its
        kind keeps no such record (then its screen tells)."""
        ...

    def lab_revive(self, ctx: LabContext, dead: Sequence[tuple[LabReady, LabOps]], deadline: float) -> list[LabReady]:
        """Dead sessions it can bring back without restarting their panes (e.g. a shared daemon gone
        under live clients); returns those revived, the lab restarts the rest."""
        ...

    def lab_outlives_panes(self, argv: Sequence[str]) -> bool:
        """Whether a process under a lab pane (its argv) is stopped by `lab_stop`, not by the panes' hangup."""
        ...

    def lab_stop(self, ctx: LabContext) -> None:
        """`relay lab down`, once the panes are gone: stop what it started outside them (a daemon)."""
        ...

    def lab_cleanup(self, ctx: LabContext) -> None:
        """`relay lab down`, once every lab process is gone: remove what it left outside the lab
        directory, keep what the next lab reuses (under `ctx.root / 'cache'`)."""
        ...


class AgentKindBase:
    """Defaults for `AgentKind`: subclass it, set the attributes, override what differs.

    `kind`, `prefix`, `label`, `evidence_name`, `providers` and `binary`/`npm_package` (or `pin`) must be given; the
    rest default to "this kind offers nothing there" (no classifier: never type; no
    evidence file; the generic `relay reply` route; no lab).
    """

    kind: str = ""
    prefix: str = ""
    label: str = ""
    mcp_setup: tuple[str, ...] = ()
    provenance: Literal["kernel", "none"] = "none"
    detail_model: type[AgentDetail] = AgentDetail
    answers_listed_inbox: bool = False
    evidence_name: str = "record"
    binary: str = ""  # its client's executable on PATH (`pin`)
    npm_package: str = ""  # the npm package that installs it (`pin`)
    busy_submit: str = "unknown: never typed while busy"
    tab_queues_when_busy: bool = False
    # characters of a typed payload sent alone first, one at a time and each seen drawn, before the
    # rest: a client that reads a burst of keys against its composer as last drawn (Gemini: `?` and
    # `!` on an "empty" composer) would otherwise take them as commands
    tmux_lead: int = 0

    def __repr__(self) -> str:
        return f"<AgentKind {self.kind}>"

    # -- identity, discovery ----------------------------------------------------------------

    def adapter(self) -> AdapterSpec:
        return load_adapter(self.kind)

    def address_rule(self) -> str:
        return f"{self.prefix}:NAME"

    def providers(self, env: Mapping[str, str], panes: PaneRoster) -> Sequence[KindProvider]:
        raise NotImplementedError(f"agent kind {self.kind!r} has no discovery")

    def own_address(self, env: Mapping[str, str]) -> Me | None:
        return None

    def sandbox_note(self, env: Mapping[str, str]) -> str | None:
        return None

    def transports(self) -> tuple[TransportSpec, ...]:
        return tuple(self.adapter().transports)

    def ui_mode_chars(self) -> str:
        return self.adapter().screen.ui_mode_chars

    def socket_wire(self) -> SocketWire | None:
        return None

    def durable_queue(self) -> DurableQueue | None:
        return None

    # -- the transports' questions (Agent) ------------------------------------------------------

    def screen(self) -> ModuleType | None:
        from relay_repl.agents import screens

        try:
            return screens.for_kind(self.kind)
        except Exception:  # no classifier for this kind: never type into it
            return None

    def tmux_busy_note(self, target: Target) -> str | None:
        return None

    def tmux_delivered_when(self) -> str:
        return f"its {self.evidence_name} gains a typed record carrying exactly this line"

    def roster_mismatch(self, target: Target, snap: Snapshot, processes: Processes, screen: ModuleType) -> str | None:
        if snap.pane_pid != target.pid:
            return f"pane {snap.pane_id} runs pid {snap.pane_pid}, not the target's {target.pid}"
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

    def waiting_refusal(self, target: Target) -> str | None:
        return None

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

    # -- replies ------------------------------------------------------------------------------

    def reply_route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        from relay_repl.core.plan import relay_reply_route

        return relay_reply_route(target.spec, ctx, "its connecting process is identified as the target")

    def reply_options(self, target: Target) -> ReplyOptions | None:
        return None

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        return None

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        from relay_repl.agents.provenance import VerifyReport

        return VerifyReport(relay_id=relay_id, source=f"{self.label or self.kind} keeps no record relay reads",
                            target=target.spec, kind=self.kind, verdict="no provenance",
                            summary=f"{self.label or self.kind} keeps no provenance: a message is plain user input "
                                    "to the model; the envelope's from= is a convention, not evidence")

    def verify_file(self, relay_id: str, path: Path, ledger: Ledger | None) -> VerifyReport | None:
        return None

    def origin_records(self, relay_id: str, target: Target,
                       ledger: Ledger | None) -> tuple[list[CheckedRecord], str, int, int] | None:
        return None

    # -- doctor, versions ---------------------------------------------------------------------

    async def doctor_checks(self, env: Mapping[str, str]) -> list[Check]:
        return []

    def verified_versions(self) -> tuple[str, ...]:
        return tuple(self.adapter().verified_versions)

    def pin(self) -> ClientPin:
        """Its declared client (`binary`, `npm_package`) at the newest version its adapter verified."""
        if not (self.binary and self.npm_package):
            raise NotImplementedError(f"agent kind {self.kind!r} names no client to install")
        return ClientPin(binary=self.binary, npm_package=self.npm_package, version=self.verified_versions()[-1])

    def npm_lock(self) -> dict[str, Any] | None:
        from importlib import resources  # here: ~10 ms of imports (tempfile, zipfile...) that only the lab installer needs

        package = type(self).__module__.rpartition(".")[0] or type(self).__module__
        try:
            loaded = json.loads(resources.files(package).joinpath("npm-lock.json").read_text())
        except (OSError, ValueError, ModuleNotFoundError):
            return None
        return loaded if isinstance(loaded, dict) else None

    def version_env(self) -> dict[str, str]:
        return {}

    def inbox_listing(self, name: str) -> InboxListing | None:
        return None

    def listed_peer_name(self, address: str) -> str | None:
        return None

    # -- the lab --------------------------------------------------------------------------------

    def lab(self) -> LabSpec | None:
        return None

    def fidelity(self) -> ModuleType | None:
        return None

    def fidelity_facts(self) -> tuple[FidelityFact, ...]:
        mod = self.fidelity()
        return tuple(getattr(mod, "FACTS", ())) if mod is not None else ()

    def lab_files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        return {}

    def lab_launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        raise NotImplementedError(f"the lab cannot start {self.kind}")

    def lab_ready(self, ctx: LabContext, name: str, pane: LabPane) -> LabReady | None:
        return None

    def lab_prepare(self, ctx: LabContext, names: Sequence[str], progress: Callable[[str], object]) -> None:
        return None

    def lab_resume(self, ctx: LabContext, name: str, first: bool, prior: LabReady) -> LabLaunch:
        return self.lab_launch(ctx, name, first)

    def lab_wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        """Poll `lab_ready` on the pane until it says ready."""
        import time

        from relay_repl.core.errors import LabError
        from relay_repl.system.polling import poll_until_sync

        def ready() -> LabReady | None:
            pane_id, pane_pid = ops.pane()
            return self.lab_ready(ctx, name, LabPane(pane_id=pane_id, pane_pid=pane_pid, screen=ops.capture()))

        found = poll_until_sync(ready, timeout=deadline - time.monotonic(), interval=0.1)
        if found is None:
            raise LabError(f"{name}: {self.kind} not ready before the deadline; screen: {screen_tail(ops.capture())}")
        return found

    def lab_settled(self, ctx: LabContext, sessions: Sequence[tuple[LabReady, LabOps]], deadline: float) -> None:
        return None

    def lab_refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        """Alive while its pane's process runs and is still the one that started."""
        from relay_repl.system.proc import is_alive

        alive = not dead and is_alive(prior.pid, prior.proc_start)
        return prior.model_copy(update={"alive": alive})

    def lab_status(self, ctx: LabContext, prior: LabReady) -> str | None:
        return None

    def lab_revive(self, ctx: LabContext, dead: Sequence[tuple[LabReady, LabOps]], deadline: float) -> list[LabReady]:
        return []

    def lab_outlives_panes(self, argv: Sequence[str]) -> bool:
        return False

    def lab_stop(self, ctx: LabContext) -> None:
        return None

    def lab_cleanup(self, ctx: LabContext) -> None:
        return None


def screen_tail(text: str, n: int = 6) -> str:
    """The last `n` non-blank lines of a screen, joined: the one-line form error messages quote."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def __getattr__(name: str) -> object:
    """`Check` stays importable from here (kinds' doctor rows), loaded only when asked for:
    core/check.py is off the `relay targets` path."""
    if name == "Check":
        from relay_repl.core.check import Check

        return Check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
