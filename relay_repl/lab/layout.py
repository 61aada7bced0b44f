"""The lab's directory and environment layout: pure functions, no processes.

One lab lives in one directory (`paths.lab_dir()`, i.e. `$RELAY_HOME/lab`):

    <lab>/lab.json              LabState (relay_repl.lab.state), written by `up`
    <lab>/stub-control.sock     stub server control API (unix socket)
    <lab>/stubs.json            stub ready file {pid, control}
    <lab>/home/                 HOME of every lab process (fake home)
    <lab>/claude/               CLAUDE_CONFIG_DIR shared by all Claude sessions
    <lab>/codex/                CODEX_HOME shared by all Codex sessions
    <lab>/tmp/                  TMPDIR
    <lab>/run/                  XDG_RUNTIME_DIR (Claude sockets: run/cc-socks/<pid>.sock)
    <lab>/work/<name>/          a `git init`ed working directory per session
    <lab>/logs/                 stub log, Claude --debug-file logs
    <lab>/cache/                survives `down`: the Codex daemon's ~400 MB package copy

Everything but `cache/` is runtime state and is removed by `down`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from relay_repl.agents.claude_code.agent import KIND as CLAUDE  # the kinds are the agents'
from relay_repl.agents.codex.agent import KIND as CODEX
from relay_repl.agents import registry

# Greek letters in order; sessions are named alpha, beta, ... (Claude first, then Codex).
GREEK = (
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
    "chi", "psi", "omega",
)

# The API key the lab's clients present to the stubs (never a real key).
LAB_API_KEY = "sk-ant-relay-lab-0000000000000000000000000000"
# AF_UNIX sun_path holds 108 bytes; Claude falls back to /tmp/cc-socks-<uid> past 103.
MAX_SOCKET_PATH = 103
PANE_WIDTH = 160
PANE_HEIGHT = 45
CLAUDE_ALLOWED_TOOLS = "Bash SendMessage ListAgents ToolSearch mcp__relay__relay_reply mcp__relay__relay_requests"
# The relay MCP server's name in both clients' configs: its tools reach the model as
# mcp__relay__relay_reply / mcp__relay__relay_requests.
MCP_SERVER = "relay"


@dataclass(frozen=True)
class McpCommand:
    """How a client starts `relay mcp`: the command, its args, the environment it needs.

    Both clients start MCP servers with a reduced environment (Codex passes only a few
    variables such as HOME and PATH), so RELAY_HOME is set explicitly: the server must
    read the operator's ledger and find the operator's inbox.
    """

    command: str
    args: tuple[str, ...] = ("mcp",)
    env: tuple[tuple[str, str], ...] = ()


def session_names(claude: int, codex: int, more: Mapping[str, int] | None = None) -> list[tuple[str, str]]:
    """[(name, kind)]: Claude sessions first, then Codex, then each other kind (`more`, in name
    order) continuing the letters.

    Past omega the letters repeat with a numeric suffix (alpha2, beta2, ...).
    """
    order = [(CLAUDE, claude), (CODEX, codex), *sorted((more or {}).items())]
    if any(n < 0 for _, n in order):
        raise ValueError("session counts must be >= 0")
    kinds = [k for k, n in order for _ in range(n)]
    out: list[tuple[str, str]] = []
    for i, kind in enumerate(kinds):
        letter, round_ = GREEK[i % len(GREEK)], i // len(GREEK)
        name = letter if round_ == 0 else f"{letter}{round_ + 1}"
        out.append((name, kind))
    return out


def tmux_socket_name(lab: Path) -> str:
    """`relay-lab-<10 hex of sha256(abs lab dir)>`: unique per lab directory."""
    digest = hashlib.sha256(str(Path(lab).absolute()).encode()).hexdigest()[:10]
    return f"relay-lab-{digest}"


def tmux_socket_path(name: str, env: Mapping[str, str] | None = None, uid: int | None = None) -> Path:
    """Where `tmux -L name` puts its socket: `${TMUX_TMPDIR:-/tmp}/tmux-<uid>/<name>`."""
    base = (os.environ if env is None else env).get("TMUX_TMPDIR") or "/tmp"
    return Path(base) / f"tmux-{os.getuid() if uid is None else uid}" / name


def toml_str(s: str) -> str:
    """A TOML basic string (JSON escaping is a valid subset for these values)."""
    return json.dumps(s, ensure_ascii=False)


def codex_provider_id(name: str) -> str:
    return f"lab-{name}"


@dataclass(frozen=True)
class Layout:
    """Every path of one lab, derived from its directory."""

    root: Path

    @classmethod
    def at(cls, root: Path | str) -> Layout:
        return cls(Path(root).absolute())

    @property
    def state_file(self) -> Path:
        return self.root / "lab.json"

    @property
    def stub_control(self) -> Path:
        return self.root / "stub-control.sock"

    @property
    def stub_ready(self) -> Path:
        return self.root / "stubs.json"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def claude_config(self) -> Path:
        return self.root / "claude"

    @property
    def codex_home(self) -> Path:
        return self.root / "codex"

    @property
    def tmpdir(self) -> Path:
        return self.root / "tmp"

    @property
    def runtime_dir(self) -> Path:
        return self.root / "run"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def codex_packages(self) -> Path:
        return self.codex_home / "packages"

    @property
    def codex_packages_cache(self) -> Path:
        return self.cache / "codex-packages"

    @property
    def tmux_socket(self) -> str:
        return tmux_socket_name(self.root)

    def workdir(self, name: str) -> Path:
        return self.work / name

    def claude_log(self, name: str) -> Path:
        return self.logs / f"{name}.claude.log"

    @property
    def runtime_dirs(self) -> list[Path]:
        """Directories `up` creates (0700) and `down` removes."""
        return [self.home, self.claude_config, self.codex_home, self.tmpdir, self.runtime_dir,
                self.work, self.logs]

    def socket_path_problem(self) -> str | None:
        """A one-line reason the lab dir is too deep for its unix sockets, or None."""
        worst = [
            (str(self.runtime_dir / "cc-socks" / "4194304-ffffffff.sock"), "Claude messaging sockets"),
            (str(self.stub_control), "the stub control socket"),
        ]
        for path, what in worst:
            if len(path.encode()) > MAX_SOCKET_PATH:
                return (f"lab directory {self.root} is too deep for {what} ({len(path.encode())} > "
                        f"{MAX_SOCKET_PATH} bytes); set RELAY_HOME to a shorter path")
        return None

    # ---- environment -------------------------------------------------------------

    def base_env(self, bin_dir: Path | str, extra_path: list[str] | None = None,
                 outer: Mapping[str, str] | None = None) -> dict[str, str]:
        """The full environment of every lab process (tmux server, TUIs, daemon, stubs).

        Built from scratch (nothing of the operator's leaks in: no real API keys, no
        proxies); only USER/LOGNAME/LANG/TMUX_TMPDIR are carried over from `outer`.
        """
        outer = os.environ if outer is None else outer
        path = [str(bin_dir), *(extra_path or []), "/usr/local/bin", "/usr/bin", "/bin"]
        seen: list[str] = []
        for p in path:
            if p and p not in seen:
                seen.append(p)
        env = {
            "PATH": ":".join(seen),
            "HOME": str(self.home),
            "SHELL": "/bin/bash",
            "TERM": "xterm-256color",
            "LANG": outer["LANG"] if "UTF-8" in outer.get("LANG", "").upper() else "C.UTF-8",
            "TMPDIR": str(self.tmpdir),
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "CLAUDE_CONFIG_DIR": str(self.claude_config),
            "CODEX_HOME": str(self.codex_home),
            "ANTHROPIC_API_KEY": LAB_API_KEY,
            "FAKE_API_KEY": LAB_API_KEY,
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "NO_PROXY": "*",
            "RELAY_LAB_DIR": str(self.root),
            "RELAY_TMUX_SOCKET": self.tmux_socket,
        }
        for key in ("USER", "LOGNAME", "TMUX_TMPDIR"):
            if outer.get(key):
                env[key] = outer[key]
        return env

    def client_env(self, bin_dir: Path | str, outer: Mapping[str, str] | None = None) -> dict[str, str]:
        """What `relay lab env` exports: points other tools (and plain `relay`) at the lab."""
        outer = os.environ if outer is None else outer
        return {
            "CLAUDE_CONFIG_DIR": str(self.claude_config),
            "CODEX_HOME": str(self.codex_home),
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "TMPDIR": str(self.tmpdir),
            "RELAY_LAB_DIR": str(self.root),
            "RELAY_TMUX_SOCKET": self.tmux_socket,
            "PATH": f"{bin_dir}:{outer.get('PATH', '/usr/bin:/bin')}",
            **{k: v for kind in registry.kinds() for k, v in kind.lab_client_env(self.home).items()},
        }

    # ---- client configuration ---------------------------------------------------------

    def claude_global_config(self, cwds: list[str]) -> dict:
        """`$CFG/.claude.json`: onboarding done, each cwd trusted, the lab key approved."""
        return {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": "2.1.328",
            "numStartups": 1,
            "projects": {
                cwd: {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
                for cwd in cwds
            },
            "customApiKeyResponses": {"approved": [LAB_API_KEY[-20:]], "rejected": []},
        }

    def codex_config(self, providers: dict[str, str], workdirs: list[str],
                     sandbox: str = "danger-full-access", shell_path: str | None = None,
                     mcp: McpCommand | None = None) -> str:
        """`$CODEX_HOME/config.toml`. `providers` maps session name -> stub base_url (.../v1).

        One model provider per session (`lab-<name>`), so each thread carries its own
        stub port even when the shared daemon resumes it headless; each TUI selects its
        own with `-c model_provider="lab-<name>"`.

        approval_policy "never" means no dialog ever; sandbox "danger-full-access" because
        the workspace-write sandbox forbids AF_UNIX and loopback TCP (measured: EPERM), so a
        Codex session could not run `relay` (or `codex queue`) for a reply. The lab's own
        network namespace is what keeps commands off the network.

        `shell_path`: Codex 0.169.0 rebuilds PATH for the commands it runs (measured:
        `<daemon>/codex-path:/usr/local/sbin:...`, dropping the inherited one), so the
        lab sets it explicitly; otherwise a lab agent could not run `relay reply`.
        `mcp`: the relay MCP server (`[mcp_servers.relay]`), the reply route that works under
        `workspace-write` too (Codex starts MCP servers outside its sandbox).
        """
        names = list(providers)
        default = codex_provider_id(names[0]) if names else "lab-none"
        lines = [
            'model = "fake-model"',
            f"model_provider = {toml_str(default)}",
            'approval_policy = "never"',
            f"sandbox_mode = {toml_str(sandbox)}",
            "check_for_update_on_startup = false",
            "",
        ]
        for name, base_url in providers.items():
            lines += [
                f"[model_providers.{toml_str(codex_provider_id(name))}]",
                f"name = {toml_str('relay lab stub ' + name)}",
                f"base_url = {toml_str(base_url)}",
                'wire_api = "responses"',
                'env_key = "FAKE_API_KEY"',
                "request_max_retries = 0",
                "stream_max_retries = 0",
                "stream_idle_timeout_ms = 600000",
                "",
            ]
        for wd in workdirs:
            lines += [f"[projects.{toml_str(wd)}]", 'trust_level = "trusted"', ""]
        if shell_path:
            lines += ["[shell_environment_policy]", 'inherit = "all"',
                      f"set = {{ PATH = {toml_str(shell_path)} }}", ""]
        if mcp:
            lines += [f"[mcp_servers.{MCP_SERVER}]", f"command = {toml_str(mcp.command)}",
                      "args = [" + ", ".join(toml_str(a) for a in mcp.args) + "]",
                      # the lab runs approval_policy "never", under which an MCP call that would
                      # ask is refused ("MCP tool call requires approval, but approval policy is
                      # never", measured): the relay tools are pre-approved, as an operator would
                      'default_tools_approval_mode = "approve"']
            if mcp.env:
                lines.append("env = { " + ", ".join(f"{k} = {toml_str(v)}" for k, v in mcp.env) + " }")
            lines.append("")
        lines += ["[analytics]", "enabled = false", "", "[features]",
                  "enable_request_compression = false", ""]
        return "\n".join(lines)

    def claude_mcp_config(self, mcp: McpCommand) -> dict:
        """The `--mcp-config` file for lab Claude sessions: the relay MCP server only."""
        return {"mcpServers": {MCP_SERVER: {"type": "stdio", "command": mcp.command, "args": list(mcp.args),
                                            "env": dict(mcp.env)}}}

    @property
    def claude_mcp_config_path(self) -> Path:
        return self.claude_config / "relay-mcp.json"

    def claude_command(self, bin_dir: Path | str, name: str, mcp_config: Path | None = None) -> list[str]:
        cmd = [
            str(Path(bin_dir) / "claude"), "-n", name,
            "--permission-mode", "acceptEdits",
            "--allowedTools", CLAUDE_ALLOWED_TOOLS,
            "--debug-file", str(self.claude_log(name)),
        ]
        if mcp_config is not None:
            cmd += ["--mcp-config", str(mcp_config)]
        return cmd

    @property
    def codex_control_socket(self) -> Path:
        """The daemon's control socket (a symlink into /tmp/codex-daemon-<uid>/)."""
        return self.codex_home / "app-server-control" / "app-server-control.sock"

    def codex_daemon_targets(self, uid: int | None = None) -> list[Path]:
        """Where the daemon's socket symlinks point: /tmp/codex-daemon-<uid>/<sha256(link path)>."""
        base = Path(f"/tmp/codex-daemon-{os.getuid() if uid is None else uid}")
        links = [self.codex_control_socket, self.codex_home / "app-server-daemon" / "daemon-updater.sock"]
        return [base / hashlib.sha256(str(link).encode()).hexdigest() for link in links]

    def codex_command(self, bin_dir: Path | str, name: str, first: bool) -> list[str]:
        """The first Codex TUI runs plain `codex`: it auto-starts the shared daemon, whose
        default provider (config.toml) is this session's stub port. Later TUIs attach to
        that daemon with `--remote` and pick their own provider per thread; a plain TUI
        with any `-c`/`--profile` override would host its thread in-process instead.
        """
        exe = str(Path(bin_dir) / "codex")
        if first:
            return [exe]
        return [exe, "--remote", f"unix://{self.codex_control_socket}",
                "-c", f"model_provider={toml_str(codex_provider_id(name))}"]
