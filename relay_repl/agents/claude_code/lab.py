"""How the lab runs Claude Code offline (agents/kind.py's lab hooks): its config directory, the files
written there before any session starts, the command a lab pane runs, and when a started session is
ready (its registry record says idle and names its messaging socket).

Why here: the lab (relay_repl/lab/) names no kind; it asks each registered kind through these hooks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_repl.agents.claude_code.agent import BINARY
from relay_repl.agents.kind import (HasLabFacts, LabCall, LabContext, LabDriverBase, LabLaunch, LabOps, LabReady, LabSpec,
                                   describe_default, lab_facts_dict, read_lab_facts, screen_tail)
from relay_repl.core.errors import LabError
from relay_repl.system import proc as sysproc
from relay_repl.system.polling import poll_until_sync

HOME_VAR = "CLAUDE_CONFIG_DIR"
HOME_DIR = "claude"
"""CLAUDE_CONFIG_DIR of every lab Claude session: `<lab>/claude`."""
ALLOWED_TOOLS = ("Bash SendMessage ListAgents ToolSearch mcp__relay__relay_reply mcp__relay__relay_requests "
                 "mcp__relay__relay_send mcp__relay__relay_request_status")
ONBOARDED_VERSION = "2.1.328"

SPEC = LabSpec(
    count_flag="claude", stub_api="anthropic", help="Claude Code sessions",
    homes={HOME_VAR: HOME_DIR},
    # CLAUDE_CODE_ENABLE_AWAY_SUMMARY=0: no "session recap" (a background model request whose `※ recap:`
    # line is drawn into the pane of a session its user was "away" from for 5+ minutes): it changed a
    # shared-lab pane under a test that asserts nothing reached it (adapters/claude-code.md, Gaps).
    # Operators keep it; relay's screen reading never depended on it.
    env={"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_ENABLE_AWAY_SUMMARY": "0"},
    key_env=("ANTHROPIC_API_KEY",),
    # AF_UNIX sun_path holds 108 bytes; Claude falls back to /tmp/cc-socks-<uid> past 103
    sockets=(("run/cc-socks/4194304-ffffffff.sock", "Claude messaging sockets"),),
)


MESSAGE_TOOL = "SendMessage"
"""Claude Code's tool that messages a listed peer session over its socket (a deferred tool in 2.1.328-2.1.332)."""
SEARCH_TOOL = "ToolSearch"
"""The tool that loads a deferred one (`select:<tool>`). The lab keeps Claude's tool search on:
`ENABLE_TOOL_SEARCH=false` would offer SendMessage (and the MCP tools) inline and save the ToolSearch
request of a session's first answer, but tool search is on by default (the 2.1.332 binary: unset
means "tst"; its own help says to set the variable to false to turn it off), so the lab would no
longer be the operator's Claude."""


class ClaudeLabFacts(BaseModel):
    """What the lab records of a Claude session beyond the common fields (lab.json `facts`)."""

    model_config = ConfigDict(extra="ignore")

    messaging_socket: str | None = None
    """The socket its registry record names, where SendMessage and the socket transport reach it."""


def lab_facts(rec: HasLabFacts) -> ClaudeLabFacts:
    """The Claude facts of a lab session (a `LabReady`, or the lab's own record of one)."""
    return read_lab_facts(ClaudeLabFacts, rec)


def _facts(messaging_socket: str | None) -> dict[str, str | int | None]:
    return lab_facts_dict(ClaudeLabFacts(messaging_socket=messaging_socket))


def message_call(peer: str, line: str, summary: str) -> LabCall:
    """SendMessage `line` to the listed peer `peer`."""
    return LabCall(name=MESSAGE_TOOL, input={"to": peer, "message": line, "summary": summary})


def load_call(tool: str, offered: Sequence[str]) -> LabCall | None:
    """`ToolSearch select:<tool>` unless the client offers `tool` already (as it does once a
    conversation has loaded it)."""
    if tool in offered:
        return None
    return LabCall(name=SEARCH_TOOL, input={"query": f"select:{tool}", "max_results": 1})


def config_dir(root: Path) -> Path:
    """The lab's CLAUDE_CONFIG_DIR, shared by all its Claude sessions."""
    return root / HOME_DIR


def mcp_config_path(root: Path) -> Path:
    """The `--mcp-config` file of every lab Claude session."""
    return config_dir(root) / "relay-mcp.json"


def log_path(ctx: LabContext, name: str) -> Path:
    """Session `name`'s `--debug-file`."""
    return ctx.logs / f"{name}.claude.log"


def global_config(cwds: Sequence[str], api_key: str) -> dict[str, Any]:
    """`$CFG/.claude.json`: onboarding done, each cwd trusted, the lab key approved."""
    return {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": ONBOARDED_VERSION,
        "numStartups": 1,
        "projects": {
            cwd: {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
            for cwd in cwds
        },
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
    }


def mcp_config(ctx: LabContext) -> dict[str, Any]:
    """The `--mcp-config` file for lab Claude sessions: the relay MCP server only."""
    return {"mcpServers": {ctx.mcp_server: {"type": "stdio", "command": ctx.mcp_command[0],
                                            "args": list(ctx.mcp_command[1:]), "env": dict(ctx.mcp_env)}}}


def command(ctx: LabContext, name: str, mcp: Path | None = None) -> list[str]:
    cmd = [
        str(ctx.bin_dir / BINARY), "-n", name,
        "--permission-mode", "acceptEdits",
        "--allowedTools", ALLOWED_TOOLS,
        "--debug-file", str(log_path(ctx, name)),
    ]
    if mcp is not None:
        cmd += ["--mcp-config", str(mcp)]
    return cmd


def record(cfg: Path, pid: int) -> dict[str, Any] | None:
    """The session's registry record (`$CFG/sessions/<pid>.json`), or None."""
    try:
        rec = json.loads((cfg / "sessions" / f"{pid}.json").read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def _start(rec: dict[str, Any]) -> str | None:
    return None if rec.get("procStart") is None else str(rec["procStart"])


def files(ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
    cfg = json.dumps(global_config([str(ctx.workdir(n)) for n in names], ctx.api_key), indent=1)
    return {mcp_config_path(ctx.root): json.dumps(mcp_config(ctx), indent=1),
            config_dir(ctx.root) / ".claude.json": cfg, ctx.home / ".claude.json": cfg}


def launch(ctx: LabContext, name: str) -> LabLaunch:
    """One builder for the first start and every restart: a session restarted without
    `--mcp-config` lost its relay MCP server (issue 16 case 10)."""
    return LabLaunch(command=tuple(command(ctx, name, mcp=mcp_config_path(ctx.root))),
                     env={"ANTHROPIC_BASE_URL": ctx.base_urls[name]} if name in ctx.base_urls else {})


def wait(ctx: LabContext, name: str, ops: LabOps, deadline: float) -> LabReady:
    """Ready when its registry record says idle and names its messaging socket."""
    from relay_repl.agents.claude_code.provider import transcript_path

    cfg = config_dir(ctx.root)
    last = ""

    def registered_idle() -> LabReady | None:
        nonlocal last
        _, pid = ops.pane()
        rec = record(cfg, pid)
        st = (rec or {}).get("status") or "unregistered"
        if rec and st == "idle" and rec.get("messagingSocketPath"):
            sid = rec.get("sessionId")
            return LabReady(pid=pid, proc_start=_start(rec), address=sid, facts=_facts(rec.get("messagingSocketPath")),
                            evidence_file=str(transcript_path(cfg, rec.get("cwd") or str(ctx.workdir(name)), sid or "")),
                            note=f"claude pid {pid} registered, idle")
        if st != last:
            last = st
            ops.progress(f"  {name}: {st}{' (' + rec['waitingFor'] + ')' if rec and rec.get('waitingFor') else ''}")
        return None

    ready = poll_until_sync(registered_idle, timeout=deadline - time.monotonic(), interval=0.1)
    if ready is not None:
        return ready
    raise LabError(f"{name}: not idle before the deadline (registry {last}); screen: {screen_tail(ops.capture())}")


def refresh(ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
    """The claude process is the pane's; its registry record (while it is the same pid) names its
    session, socket and transcript."""
    from relay_repl.agents.claude_code.provider import transcript_path

    cfg = config_dir(ctx.root)
    upd: dict[str, Any] = {"pid": pane_pid}
    rec = record(cfg, pane_pid)
    start = prior.proc_start
    if rec and str(rec.get("pid")) == str(pane_pid):
        start = _start(rec) or prior.proc_start
        sid = rec.get("sessionId") or prior.address
        sock = rec.get("messagingSocketPath") or lab_facts(prior).messaging_socket
        upd.update(proc_start=start, address=sid, facts={**prior.facts, **_facts(sock)})
        if sid:
            upd["evidence_file"] = str(transcript_path(cfg, rec.get("cwd") or str(ctx.workdir(prior.name or "")), sid))
    alive = sysproc.same_process(pane_pid, start)[0] if start else sysproc.pid_alive(pane_pid)
    upd["alive"] = not dead and alive
    return prior.model_copy(update=upd)


def status(ctx: LabContext, prior: LabReady) -> str:
    """Its registry record's status ('idle', 'busy', 'shell', ...), 'unregistered' without one."""
    rec = record(config_dir(ctx.root), prior.pid) if prior.pid else None
    return str((rec or {}).get("status") or "unregistered")


class ClaudeLab(LabDriverBase):
    """Its `LabDriver` (agents/kind.py): the functions above."""

    spec = SPEC

    def files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        return files(ctx, names)

    def launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        return launch(ctx, name)

    def wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        return wait(ctx, name, ops, deadline)

    def refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        return refresh(ctx, prior, pane_pid, dead)

    def status(self, ctx: LabContext, prior: LabReady) -> str | None:
        return status(ctx, prior)

    def describe(self, rec: LabReady) -> str:
        sock = lab_facts(rec).messaging_socket
        return f"pid {rec.pid} sock {sock}" if sock else describe_default(rec)

    def adopt(self, old: Mapping[str, Any]) -> dict[str, Any]:
        """Before `facts`, lab.json kept the socket flat, as `messaging_socket`."""
        return {"facts": _facts(old.get("messaging_socket"))}

    def message_call(self, peer: str, line: str, summary: str) -> LabCall | None:
        return message_call(peer, line, summary)

    def load_call(self, tool: str, offered: Sequence[str]) -> LabCall | None:
        return load_call(tool, offered)
