"""Setting up the clients before they start: directories, each kind's config files (with the relay
MCP server), what a kind prepares before its sessions start, and the command each session runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import relay_repl.lab.kind_sessions as kind_sessions
from relay_repl.agents.kind import LabContext
from relay_repl.lab.layout import Layout, McpCommand
from relay_repl.lab.state import LabSession, LabState
from relay_repl.lab.labenv import NETNS, Progress, lab_env


def prepare_dirs(lay: Layout, names: list[tuple[str, str]]) -> None:
    lay.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(lay.root, 0o700)
    for d in lay.runtime_dirs:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    git = shutil.which("git")
    for name, _kind in names:
        wd = lay.workdir(name)
        wd.mkdir(parents=True, exist_ok=True, mode=0o700)
        if git and not (wd / ".git").exists():
            subprocess.run([git, "init", "-q", str(wd)], env=lab_env(lay), capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=30)


def _mcp_command(lay: Layout) -> McpCommand:
    """`relay mcp` from this very installation, pointed at the operator's state (RELAY_HOME)."""
    exe = Path(sys.executable).parent / "relay"
    args: tuple[str, ...]
    if exe.exists():
        command, args = str(exe), ("mcp",)
    else:  # a source checkout run without the console script
        command, args = sys.executable, ("-m", "relay_repl", "mcp")
    env = lab_env(lay)
    # the client homes too: the server identifies the session that called it (relay_requests
    # lists that session's requests only; a relay_reply claims the session proven to make it)
    keep = ("RELAY_HOME", "PATH", *lay.client_homes)
    return McpCommand(command=command, args=args, env=tuple((k, env[k]) for k in keep if env.get(k)))


def run_prefix(state: LabState | None) -> list[str]:
    """argv prefix that runs a command in the lab's network namespace (none when it has none)."""
    if state is None or not state.netns or not state.stub.pid:
        return []
    return [sys.executable, NETNS, "--enter", str(state.stub.pid), "--"]


def lab_context(lay: Layout, state: LabState | None, bins: Path) -> LabContext:
    """What a kind is told about this lab."""
    mcp = _mcp_command(lay)
    return kind_sessions.context(lay, state, bins, (mcp.command, *mcp.args), dict(mcp.env), lab_env(lay),
                                 run_prefix(state))


def _by_kind(names: list[tuple[str, str]]) -> dict[str, list[str]]:
    by_kind: dict[str, list[str]] = {}
    for n, k in names:
        by_kind.setdefault(k, []).append(n)
    return by_kind


def write_configs(ctx: LabContext, names: list[tuple[str, str]]) -> None:
    """Each kind's config files for its sessions, before any starts."""
    kind_sessions.write_files(ctx, _by_kind(names))


def prepare_kinds(ctx: LabContext, names: list[tuple[str, str]], progress: Progress) -> None:
    """What each kind prepares before its sessions start (a cache moved back in)."""
    for kind, ns in _by_kind(names).items():
        kind_sessions.own_kind(kind).prepare(ctx, ns, progress)


def launch_command(lay: Layout, state: LabState, s: LabSession, bins: Path) -> tuple[list[str], dict[str, str]]:
    """The command a lab session runs and the environment it adds, for its first start and for
    every restart alike: one builder per kind, so a restarted session cannot come back with less
    than it started with (a session restarted without its MCP config lost its relay MCP server,
    and `--reply-via mcp` to it was refused: issue 16 case 10)."""
    launch = kind_sessions.launch(lab_context(lay, state, bins), state, s)
    return launch.argv(), dict(launch.env)
