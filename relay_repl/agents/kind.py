"""`AgentKind`: everything about one agent kind, behind one protocol (issue 19).

Why one protocol: adding an agent must not mean editing the session, the transports,
the doctor, the verifier and the lab. An agent package (`relay_repl/agents/<kind>/`, or
any distribution installed beside relay_repl) provides one object implementing this
protocol and names it in the entry-point group `relay_repl.agents`:

    [project.entry-points."relay_repl.agents"]
    claude-code = "relay_repl.agents.claude_code.kind:ClaudeCodeKind"

`relay_repl.agents.registry` loads that group; everything above the agents layer asks
the registry (`kinds()`, `kind_for(name)`) and never names a kind.

The protocol is eight members (agents/capabilities.py holds the capability protocols and their
bases): `facts` (who it is: kind, prefix, label, address rule, MCP setup lines, detail model, the
pinned client), `discovery` (providers, our own address, its sandbox's note), `screen` (the
classifier and the tmux transport's questions about its pane), `evidence` (its own record and what
a typed line left there), `replies` (reply routes, options, the turn reply, the operator's inbox as
its listed peer), `checks` (`relay verify`, `relay doctor`, `relay fidelity`), `transports` (the
adapter's TransportSpec list, its socket wire and durable queue) and `lab_driver()` (how `relay lab`
runs it offline: a `LabDriver`, or None). Subclass `AgentKindBase` rather than implementing the
protocol from scratch: every capability defaults to "this kind offers nothing there", so a kind
names only the capabilities it has, each by `module:Class` so it loads on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from relay_repl.agents.capabilities import (ChecksBase, ClientPin, DiscoveryBase, EvidenceBase, FidelityFact,
                                            InboxListing, KindChecks, KindDiscovery, KindEvidence, KindFacts,
                                            KindReplies, KindScreen, KindTransports, RepliesBase, ScreenBase,
                                            TransportsBase, _Frozen, capability)
from relay_repl.core.target import AgentDetail

if TYPE_CHECKING:  # annotations only: plan, check and screens load on first use, off the `relay targets` path
    from relay_repl.agents.screens.model import ScreenReading
    from relay_repl.core.check import Check

__all__ = ["AgentKind", "AgentKindBase", "Check", "ClientPin", "FidelityFact", "InboxListing", "KindFacts", "LabCall",
           "LabContext", "LabDriver", "LabDriverBase", "LabLaunch", "LabOps", "LabPane", "LabReady", "LabSpec", "MEMBERS",
           "NoDetail", "capability", "is_agent_kind", "missing_members"]


LAB_HOME = "home"
"""The lab's $HOME, as a directory under the lab root (`<lab>/home`): a `LabSpec.homes` value for a
client whose home is $HOME itself (its state under `$HOME/.<client>`)."""

NO_HOME = "/dev/null/relay-version"
"""A client home no process can create (its parent is not a directory): a kind's `version_env`
points its home here, so `--version` writes nowhere (issue 16 case 8)."""


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
        "addresses that existed before this start, read by `LabDriver.launch` (a fresh session's own is the one "
        "not among them): `LabDriver.wait` is handed this launch"))
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


class LabCall(_Frozen):
    """One tool call a lab agent's stub model makes, as its client offers the tool: the stub server
    asks the kind's driver for these (its client's tool names and argument shapes are the kind's)."""

    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)


class LabReady(_Frozen):
    """A started lab session, ready: how the lab records it."""

    pid: int | None = None
    address: str | None = Field(default=None, description="session id / thread id, as its kind addresses it")
    evidence_file: str | None = None
    note: str = Field(default="", description="the progress line, e.g. 'claude pid 42 registered, idle'")
    facts: dict[str, str | int | None] = Field(default_factory=dict, description=(
        "what its kind records of the session beyond these fields (a messaging socket, a shared daemon's "
        "pid): written and read only by its own lab driver, kept in lab.json as `facts`"))
    focus_in: bool = Field(default=False, description="the lab's tmux (focus-events on, no client attached) leaves "
                           "the pane unfocused and this client then draws no cursor: the lab sends it a focus-in "
                           "report (ESC [ I), as a terminal an operator looks at would, and waits until the "
                           "product's own screen reading can type into it")
    proc_start: str | None = Field(default=None, description="the client's own record of its start (else the lab "
                                   "reads /proc)")
    name: str | None = Field(default=None, description="the session's name now (its client may rename it)")
    alive: bool = True


_F = TypeVar("_F", bound=BaseModel)


class HasLabFacts(Protocol):
    """A lab session as the lab records it, or its `LabReady`: each carries its kind's `facts`."""

    @property
    def facts(self) -> Mapping[str, str | int | None]: ...


def read_lab_facts(model: type[_F], rec: HasLabFacts) -> _F:
    """A kind's typed view (its driver's own model, extra keys ignored) of a lab session's `facts`."""
    return model.model_validate(dict(rec.facts))


def lab_facts_dict(facts: BaseModel) -> dict[str, str | int | None]:
    """A kind's facts as `LabReady.facts` / lab.json keep them."""
    return dict(facts.model_dump())


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


NoDetail = AgentDetail
"""The detail of a kind that keeps none beyond the common Target fields."""


@runtime_checkable
class LabDriver(Protocol):
    """How the lab runs a kind's real client offline (`relay lab up/status/down`); `lab_driver()` of a
    kind the lab can run. Subclass `LabDriverBase`: it holds a default for every member but `spec`
    and `launch`, and its `wait` polls `ready`."""

    spec: LabSpec
    """How `relay lab up` offers it (count flag, default count, stub API, homes, environment)."""

    def files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        """Config files (path -> text) its lab sessions `names` need before any starts."""
        ...

    def prepare(self, ctx: LabContext, names: Sequence[str], progress: Callable[[str], object]) -> None:
        """Before its lab sessions `names` start (after `files`): e.g. restore a cache."""
        ...

    def launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        """The command and environment of lab session `name` (`first`: the first of its kind)."""
        ...

    def resume(self, ctx: LabContext, name: str, first: bool, prior: LabReady) -> LabLaunch:
        """The command that restarts dead lab session `name` (`prior`: what the lab recorded of it)."""
        ...

    def wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        """Wait until the session just started with `launch` is ready (raises LabError at `deadline`)."""
        ...

    def settled(self, ctx: LabContext, sessions: Sequence[tuple[LabReady, LabOps]], deadline: float) -> None:
        """Once every lab session of every kind is ready: confirm its own still are (raises LabError)."""
        ...

    def refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        """`relay lab status`: a lab session as it is now (`dead`: its pane's process exited)."""
        ...

    def status(self, ctx: LabContext, prior: LabReady) -> str | None:
        """What the session's own record says it is doing ('idle', 'busy', ...), or None when its
        kind keeps no such record (then its screen tells)."""
        ...

    def revive(self, ctx: LabContext, dead: Sequence[tuple[LabReady, LabOps]], deadline: float) -> list[LabReady]:
        """Dead sessions it can bring back without restarting their panes (e.g. a shared daemon gone
        under live clients); returns those revived, the lab restarts the rest."""
        ...

    def outlives_panes(self, argv: Sequence[str]) -> bool:
        """Whether a process under a lab pane (its argv) is stopped by `stop`, not by the panes' hangup."""
        ...

    def stop(self, ctx: LabContext) -> None:
        """`relay lab down`, once the panes are gone: stop what it started outside them (a daemon)."""
        ...

    def cleanup(self, ctx: LabContext) -> None:
        """`relay lab down`, once every lab process is gone: remove what it left outside the lab
        directory, keep what the next lab reuses (under `ctx.root / 'cache'`)."""
        ...

    def describe(self, rec: LabReady) -> str:
        """How `relay lab status` names the session after its pane: 'pid 42 session <id>' by default."""
        ...

    def adopt(self, old: Mapping[str, Any]) -> dict[str, Any]:
        """A lab session recorded by the relay before kind facts moved into `facts`: from the flat fields
        lab.json then held that the common record no longer has (`old`), what to set now (its `facts`,
        its `session_id`), so a lab started before an upgrade still reads."""
        ...

    def message_call(self, peer: str, line: str, summary: str) -> LabCall | None:
        """The call by which its lab agent sends `line` natively to `peer`, a peer listed in its own
        registry (the stub model's answer when the kind `answers_listed_inbox`), or None."""
        ...

    def load_call(self, tool: str, offered: Sequence[str]) -> LabCall | None:
        """The call that loads `tool`, which its client defers, before the first call of it, when
        `offered` (the tools its client sent with the request) does not hold it yet; else None."""
        ...

    def shell_call(self, cmd: str, why: str) -> LabCall | None:
        """`cmd` run through its client's shell tool (`why`: what for, e.g. the relay id answered), or
        None when its lab agent has no shell tool."""
        ...

    def rename_line(self, name: str) -> str | None:
        """The line typed into its idle composer that renames its session to `name` from inside (read
        back by `refresh`), or None when its client cannot."""
        ...

    def scripted_call(self, call: LabCall) -> LabCall:
        """A tool call a test scripts for its stub model, with what its client needs that the script
        may leave out (default: unchanged)."""
        ...


class LabDriverBase:
    """Defaults for `LabDriver`: set `spec`, give `launch` and either `ready` (polled by `wait`) or `wait`."""

    spec: LabSpec

    def __init__(self, facts: KindFacts) -> None:
        self.facts = facts

    def __repr__(self) -> str:
        return f"<lab driver of {self.facts.kind}>"

    def files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        return {}

    def prepare(self, ctx: LabContext, names: Sequence[str], progress: Callable[[str], object]) -> None:
        return None

    def launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        raise NotImplementedError(f"the lab cannot start {self.facts.kind}")

    def resume(self, ctx: LabContext, name: str, first: bool, prior: LabReady) -> LabLaunch:
        return self.launch(ctx, name, first)

    def ready(self, ctx: LabContext, name: str, pane: LabPane) -> LabReady | None:
        """Polled by the default `wait` after start: the ready session, or None while it is still starting."""
        return None

    def wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        """Poll `ready` on the pane until it says ready."""
        import time

        from relay_repl.core.errors import LabError
        from relay_repl.system.polling import poll_until_sync

        def ready() -> LabReady | None:
            pane_id, pane_pid = ops.pane()
            return self.ready(ctx, name, LabPane(pane_id=pane_id, pane_pid=pane_pid, screen=ops.capture()))

        found = poll_until_sync(ready, timeout=deadline - time.monotonic(), interval=0.1)
        if found is None:
            raise LabError(f"{name}: {self.facts.kind} not ready before the deadline; screen: {screen_tail(ops.capture())}")
        return found

    def settled(self, ctx: LabContext, sessions: Sequence[tuple[LabReady, LabOps]], deadline: float) -> None:
        return None

    def refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        """Alive while its pane's process runs and is still the one that started."""
        from relay_repl.system.proc import is_alive

        alive = not dead and is_alive(prior.pid, prior.proc_start)
        return prior.model_copy(update={"alive": alive})

    def status(self, ctx: LabContext, prior: LabReady) -> str | None:
        return None

    def revive(self, ctx: LabContext, dead: Sequence[tuple[LabReady, LabOps]], deadline: float) -> list[LabReady]:
        return []

    def outlives_panes(self, argv: Sequence[str]) -> bool:
        return False

    def stop(self, ctx: LabContext) -> None:
        return None

    def cleanup(self, ctx: LabContext) -> None:
        return None

    def describe(self, rec: LabReady) -> str:
        return describe_default(rec)

    def adopt(self, old: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def message_call(self, peer: str, line: str, summary: str) -> LabCall | None:
        return None

    def load_call(self, tool: str, offered: Sequence[str]) -> LabCall | None:
        return None

    def shell_call(self, cmd: str, why: str) -> LabCall | None:
        return None

    def rename_line(self, name: str) -> str | None:
        return None

    def scripted_call(self, call: LabCall) -> LabCall:
        return call


def describe_default(rec: LabReady) -> str:
    """`pid 42 session <address>`: a lab session's status words when its kind says nothing more."""
    return f"pid {rec.pid} session {rec.address or '-'}"


@runtime_checkable
class AgentKind(Protocol):
    """One agent kind: who it is and the capabilities the layers above ask (agents/capabilities.py).
    Eight members, no more (tests/agents/test_kind_protocol.py counts them)."""

    facts: KindFacts
    """Who it is: kind, prefix, label, address rule, MCP setup lines, detail model, pinned client."""
    discovery: KindDiscovery
    """Finding its sessions (providers), ours among them, and its sandbox's note."""
    screen: KindScreen
    """Its pane: the classifier, what typing does, whether the pane still runs the target."""
    evidence: KindEvidence
    """Its own record: where it is and what a typed line left there."""
    replies: KindReplies
    """How its sessions answer (routes, turn reply) and the operator's inbox as its listed peer."""
    checks: KindChecks
    """`relay verify` on its record, `relay doctor` rows, `relay fidelity` facts."""
    transports: KindTransports
    """The transports it offers, its socket wire and durable queue."""

    def lab_driver(self) -> LabDriver | None:
        """How the lab runs it offline, or None when the lab cannot."""
        ...


MEMBERS = ("facts", "discovery", "screen", "evidence", "replies", "checks", "transports", "lab_driver")
"""`AgentKind`'s members, in order (tests/agents/test_kind_protocol.py holds them to the protocol)."""


def missing_members(obj: object) -> list[str]:
    """The `AgentKind` members `obj` lacks, asked of its class (or its own attributes) so that no
    capability is made, and none of its modules imported, just to be checked."""
    if isinstance(obj, type):
        return list(MEMBERS)
    return [m for m in MEMBERS if not (hasattr(type(obj), m) or m in getattr(obj, "__dict__", {}))]


def is_agent_kind(obj: object) -> bool:
    """Whether `obj` offers every `AgentKind` member (`missing_members`)."""
    return not missing_members(obj)


class AgentKindBase:
    """Defaults for `AgentKind`: subclass it, set `facts` (and `discovery`), name the capabilities that
    differ (`capability(MyScreen)` or `capability("my_package.screen:MyScreen")`, loaded on first use).

    Every capability defaults to "this kind offers nothing there" (no classifier: never type; no
    evidence file; the generic `relay reply` route; no provenance; no lab).
    """

    facts: KindFacts
    discovery: KindDiscovery = capability(DiscoveryBase)
    screen: KindScreen = capability(ScreenBase)
    evidence: KindEvidence = capability(EvidenceBase)
    replies: KindReplies = capability(RepliesBase)
    checks: KindChecks = capability(ChecksBase)
    transports: KindTransports = capability(TransportsBase)

    def __repr__(self) -> str:
        return f"<AgentKind {self.facts.kind}>"

    def lab_driver(self) -> LabDriver | None:
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
