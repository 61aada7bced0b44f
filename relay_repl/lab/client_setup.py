"""Setting up the clients before they start: directories, config files (with the relay MCP
server), the Codex daemon's package cache, and the command line each session runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


import relay_repl.lab.kind_sessions as kind_sessions
from relay_repl.agents.kind import LabContext
from relay_repl.lab.install import VERIFIED_VERSIONS

from relay_repl.lab.layout import CLAUDE, CODEX, Layout, McpCommand
from relay_repl.lab.state import LabSession, LabState, StubInfo
from relay_repl.lab.labenv import Progress, lab_env


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
    # the client registries too: the server identifies the session that called it (relay_requests
    # lists that session's requests only; a relay_reply claims the session proven to make it)
    keep = ("RELAY_HOME", "PATH", "CODEX_HOME", "CLAUDE_CONFIG_DIR")
    return McpCommand(command=command, args=args, env=tuple((k, env[k]) for k in keep if env.get(k)))


def lab_context(lay: Layout, state: LabState, bins: Path) -> LabContext:
    """What a kind starting through its own lab pieces is told about this lab."""
    mcp = _mcp_command(lay)
    return kind_sessions.context(lay, state, bins, (mcp.command, *mcp.args), dict(mcp.env))


def write_configs(lay: Layout, names: list[tuple[str, str]], stub: StubInfo) -> None:
    claude_cwds = [str(lay.workdir(n)) for n, k in names if k == CLAUDE]
    lay.claude_mcp_config_path.write_text(json.dumps(lay.claude_mcp_config(_mcp_command(lay)), indent=1))
    cfg = json.dumps(lay.claude_global_config(claude_cwds), indent=1)
    (lay.claude_config / ".claude.json").write_text(cfg)
    (lay.home / ".claude.json").write_text(cfg)
    codex = {n: stub.sessions[n].base_url for n, k in names if k == CODEX}
    if codex:
        workdirs = [str(lay.workdir(n)) for n in codex]
        path = lay.codex_home / "config.toml"
        sandbox = os.environ.get("RELAY_LAB_CODEX_SANDBOX") or "danger-full-access"
        path.write_text(lay.codex_config(codex, workdirs, sandbox=sandbox, shell_path=lab_env(lay)["PATH"],
                                         mcp=_mcp_command(lay)))
        os.chmod(path, 0o600)


def restore_codex_packages(lay: Layout, progress: Progress) -> None:
    """Move the cached daemon package copy back into CODEX_HOME (a rename: instant)."""
    cache, dest = lay.codex_packages_cache, lay.codex_packages
    if not cache.exists() or dest.exists():
        return
    current = cache / "app-server-daemon" / "current"
    try:
        target = os.readlink(current)
    except OSError:
        target = ""
    want = f"{lay.codex_packages}/app-server-daemon/releases/{VERIFIED_VERSIONS[CODEX]}-"
    if not target.startswith(want):
        shutil.rmtree(cache, ignore_errors=True)  # another version or another lab path
        return
    os.rename(cache, dest)
    progress("codex daemon packages restored from cache")


def save_codex_packages(lay: Layout) -> None:
    src, cache = lay.codex_packages, lay.codex_packages_cache
    if not (src / "app-server-daemon" / "current").is_symlink():
        return
    if cache.exists():
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.rename(src, cache)
    except OSError:
        pass


def launch_command(lay: Layout, state: LabState, s: LabSession, bins: Path) -> tuple[list[str], dict[str, str]]:
    """The command a lab session runs and the environment it adds, for its first start and for
    every restart alike: one builder, so a restarted session cannot come back with less than it
    started with (a Claude session restarted without `--mcp-config` lost its relay MCP server,
    and `--reply-via mcp` to it was refused: issue 16 case 10)."""
    if s.kind == CLAUDE:
        return (lay.claude_command(bins, s.name, mcp_config=lay.claude_mcp_config_path),
                {"ANTHROPIC_BASE_URL": state.stub.sessions[s.name].base_url})
    if s.kind != CODEX:  # any other kind: its own package says
        launch = kind_sessions.launch(lab_context(lay, state, bins), state, s)
        return launch.argv(), dict(launch.env)
    codexes = state.of_kind(CODEX)
    return lay.codex_command(bins, s.name, first=bool(codexes) and s is codexes[0]), {}

