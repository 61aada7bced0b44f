"""The lab's directory and environment layout: pure functions, no processes.

One lab lives in one directory (`paths.lab_dir()`, i.e. `$RELAY_HOME/lab`):

    <lab>/lab.json              LabState (relay_repl.lab.state), written by `up`
    <lab>/stub-control.sock     stub server control API (unix socket)
    <lab>/stubs.json            stub ready file {pid, control}
    <lab>/home/                 HOME of every lab process (fake home)
    <lab>/<dir>/                each lab kind's client home (its LabSpec.homes: variable -> dir),
                                shared by all its sessions
    <lab>/tmp/                  TMPDIR
    <lab>/run/                  XDG_RUNTIME_DIR (clients' sockets)
    <lab>/work/<name>/          a `git init`ed working directory per session
    <lab>/logs/                 stub log, clients' debug logs
    <lab>/cache/                survives `down`: what a kind keeps for the next lab (a daemon's package copy)

Everything but `cache/` is runtime state and is removed by `down`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from relay_repl.agents.kind import LAB_HOME, AgentKind, LabDriver, LabSpec
from relay_repl.agents.registry import kinds

# Greek letters in order; sessions are named alpha, beta, ... (kind by kind, in the kinds' name order).
GREEK = (
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
    "chi", "psi", "omega",
)

# The API key the lab's clients present to the stubs (never a real key).
LAB_API_KEY = "sk-ant-relay-lab-0000000000000000000000000000"
# AF_UNIX sun_path holds 108 bytes; a longer socket path is refused (or moved) by its client.
MAX_SOCKET_PATH = 103
PANE_WIDTH = 160
PANE_HEIGHT = 45


def lab_kinds() -> list[AgentKind]:
    """Every registered kind the lab can run offline (its package says how), in name order."""
    return [k for k in kinds() if k.lab_driver() is not None]


def driver(k: AgentKind) -> LabDriver:
    """How the lab runs kind `k` (its `lab_driver()`); a LabError for a kind the lab cannot run."""
    from relay_repl.core.errors import LabError

    d = k.lab_driver()
    if d is None:
        raise LabError(f"no registered agent kind {k.facts.kind!r} says how the lab runs it")
    return d


def lab_specs() -> list[LabSpec]:
    return [driver(k).spec for k in lab_kinds()]


def client_home_vars() -> set[str]:
    """Every variable that points a kind's client (or relay's reading of it) at a home: its LabSpec
    homes. A child that starts a lab of its own drops these from the environment it inherits, so it
    never reaches the operator's (or another lab's) sessions."""
    return {var for k in kinds() if (d := k.lab_driver()) is not None for var in d.spec.homes}


@dataclass(frozen=True)
class McpCommand:
    """How a client starts `relay mcp`: the command, its args, the environment it needs.

    Clients start MCP servers with a reduced environment (Codex passes only a few
    variables such as HOME and PATH), so RELAY_HOME is set explicitly: the server must
    read the operator's ledger and find the operator's inbox.
    """

    command: str
    args: tuple[str, ...] = ("mcp",)
    env: tuple[tuple[str, str], ...] = ()


def session_names(counts: Mapping[str, int]) -> list[tuple[str, str]]:
    """[(name, kind)] for {kind: count}: kind by kind in name order, continuing the letters.

    Past omega the letters repeat with a numeric suffix (alpha2, beta2, ...).
    """
    order = sorted(counts.items())
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
        return self.root / LAB_HOME

    @property
    def client_homes(self) -> dict[str, Path]:
        """Each lab kind's client home: variable -> `<lab>/<dir>` (its LabSpec.homes)."""
        return {var: self.root / d for spec in lab_specs() for var, d in spec.homes.items()}

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
    def tmux_socket(self) -> str:
        return tmux_socket_name(self.root)

    def workdir(self, name: str) -> Path:
        return self.work / name

    @property
    def runtime_dirs(self) -> list[Path]:
        """Directories `up` creates (0700) and `down` removes."""
        # dict.fromkeys: a client home may be the lab's $HOME itself (LAB_HOME)
        return list(dict.fromkeys([self.home, *self.client_homes.values(), self.tmpdir, self.runtime_dir,
                                   self.work, self.logs]))

    def socket_path_problem(self) -> str | None:
        """A one-line reason the lab dir is too deep for its unix sockets, or None."""
        worst = [*((str(self.root / rel), what) for spec in lab_specs() for rel, what in spec.sockets),
                 (str(self.stub_control), "the stub control socket")]
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
            **{var: str(path) for var, path in self.client_homes.items()},
            **{var: LAB_API_KEY for spec in lab_specs() for var in spec.key_env},
            **{var: value for spec in lab_specs() for var, value in spec.env.items()},
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
            **{var: str(path) for var, path in self.client_homes.items()},
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "TMPDIR": str(self.tmpdir),
            "RELAY_LAB_DIR": str(self.root),
            "RELAY_TMUX_SOCKET": self.tmux_socket,
            "PATH": f"{bin_dir}:{outer.get('PATH', '/usr/bin:/bin')}",
        }
