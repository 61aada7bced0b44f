"""How the lab runs Codex offline (agents/kind.py's lab hooks): its CODEX_HOME and config.toml, the
shared app-server daemon (started by the first TUI, stopped at `down`, its ~400 MB package copy kept
in the lab's cache), the command each TUI runs, and when a started TUI is ready (idle by the product's
classifier, its thread's lock held, named by `/rename` in session_index.jsonl, its shell snapshot taken).

Why here: the lab (relay_repl/lab/) names no kind; it asks each registered kind through these hooks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from pydantic import BaseModel, ConfigDict

from relay_repl.agents.codex.provider import is_codex_tui, read_session_index
from relay_repl.agents.codex.agent import BINARY
from relay_repl.agents.kind import (HasLabFacts, LabCall, LabContext, LabDriverBase, LabLaunch, LabOps, LabReady, LabSpec,
                                   lab_facts_dict, read_lab_facts, screen_tail)
from relay_repl.agents.screens.model import ScreenReading
from relay_repl.core.errors import LabError
from relay_repl.system import proc as sysproc
from relay_repl.system.polling import poll_until_sync
from relay_repl.system.remove import remove

HOME_VAR = "CODEX_HOME"
HOME_DIR = "codex"
"""CODEX_HOME of every lab Codex session: `<lab>/codex`."""
KEY_VAR = "FAKE_API_KEY"
"""The variable config.toml's providers read the lab's fake key from (`env_key`)."""

SPEC = LabSpec(
    count_flag="codex", stub_api="openai", help="Codex sessions",
    homes={HOME_VAR: HOME_DIR}, key_env=(KEY_VAR,),
    # one thread at a time, each started only once the one before is named and has its shell
    # snapshot: see `wait_snapshot`
    serial=True,
)


SHELL_TOOL = "exec_command"
"""Codex's shell tool: `{cmd, yield_time_ms}`."""
SHELL_YIELD_MS = 30000
"""How long the lab agent's shell calls let a command run before the tool returns (`yield_time_ms`):
the stub's own calls and a scripted call that names none."""


class CodexLabFacts(BaseModel):
    """What the lab records of a Codex session beyond the common fields (lab.json `facts`); its
    session id is its thread's id."""

    model_config = ConfigDict(extra="ignore")

    daemon_pid: int | None = None
    """The shared app-server daemon hosting its thread (and holding the thread's lock)."""
    provider: str | None = None
    """The model provider its TUI selects in config.toml (`lab-<name>`, its own stub port)."""


def lab_facts(rec: HasLabFacts) -> CodexLabFacts:
    """The Codex facts of a lab session (a `LabReady`, or the lab's own record of one)."""
    return read_lab_facts(CodexLabFacts, rec)


def _facts(daemon: int | None, provider: str | None) -> dict[str, str | int | None]:
    return lab_facts_dict(CodexLabFacts(daemon_pid=daemon, provider=provider))


def rename_line(name: str) -> str:
    """`/rename <name>`: the TUI's command that names its thread (session_index.jsonl records it)."""
    return f"/rename {name}"


def shell_call(cmd: str) -> LabCall:
    """`cmd` through Codex's shell tool."""
    return LabCall(name=SHELL_TOOL, input={"cmd": cmd, "yield_time_ms": SHELL_YIELD_MS})


def home(root: Path) -> Path:
    """The lab's CODEX_HOME, shared by all its Codex sessions and the daemon."""
    return root / HOME_DIR


def packages(root: Path) -> Path:
    return home(root) / "packages"


def packages_cache(root: Path) -> Path:
    """Survives `down`: the daemon's package copy, moved back in at the next `up`."""
    return root / "cache" / "codex-packages"


def provider_id(name: str) -> str:
    """Session `name`'s model provider in config.toml."""
    return f"lab-{name}"


def toml_str(s: str) -> str:
    """A TOML basic string (JSON escaping is a valid subset for these values)."""
    return json.dumps(s, ensure_ascii=False)


def control_socket(root: Path) -> Path:
    """The daemon's control socket (a symlink into /tmp/codex-daemon-<uid>/)."""
    return home(root) / "app-server-control" / "app-server-control.sock"


def daemon_targets(root: Path, uid: int | None = None) -> list[Path]:
    """Where the daemon's socket symlinks point: /tmp/codex-daemon-<uid>/<sha256(link path)>."""
    base = Path(f"/tmp/codex-daemon-{os.getuid() if uid is None else uid}")
    links = [control_socket(root), home(root) / "app-server-daemon" / "daemon-updater.sock"]
    return [base / hashlib.sha256(str(link).encode()).hexdigest() for link in links]


def config(providers: Mapping[str, str], workdirs: Sequence[str], sandbox: str = "danger-full-access",
           shell_path: str | None = None, mcp: tuple[str, Sequence[str], Mapping[str, str]] | None = None,
           mcp_server: str = "relay", unload_delay: int | None = None) -> str:
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
    `mcp`: (command, args, env) of the relay MCP server (`[mcp_servers.relay]`), the reply route
    that works under `workspace-write` too (Codex starts MCP servers outside its sandbox).
    `unload_delay`: `thread_unload_delay_secs`, how long the daemon keeps a thread loaded once no
    TUI is attached (unset: Codex's default, 40-60 s observed; see adapters/codex.md).
    """
    names = list(providers)
    default = provider_id(names[0]) if names else "lab-none"
    lines = [
        'model = "fake-model"',
        f"model_provider = {toml_str(default)}",
        'approval_policy = "never"',
        f"sandbox_mode = {toml_str(sandbox)}",
        "check_for_update_on_startup = false",
        *([f"thread_unload_delay_secs = {int(unload_delay)}"] if unload_delay is not None else []),
        "",
    ]
    for name, base_url in providers.items():
        lines += [
            f"[model_providers.{toml_str(provider_id(name))}]",
            f"name = {toml_str('relay lab stub ' + name)}",
            f"base_url = {toml_str(base_url)}",
            'wire_api = "responses"',
            f'env_key = "{KEY_VAR}"',
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
        command, args, env = mcp
        lines += [f"[mcp_servers.{mcp_server}]", f"command = {toml_str(command)}",
                  "args = [" + ", ".join(toml_str(a) for a in args) + "]",
                  # the lab runs approval_policy "never", under which an MCP call that would
                  # ask is refused ("MCP tool call requires approval, but approval policy is
                  # never", measured): the relay tools are pre-approved, as an operator would
                  'default_tools_approval_mode = "approve"']
        # No startup_timeout_sec: Codex's default (10 s to answer `initialize`) is what an
        # operator's own config gets, and `relay mcp` answers in 0.07-0.23 s wall, 0.04-0.07 CPU-s
        # at load 3-6 (measured, issue 17). The SDK-built server it replaced needed 0.8-1.6 CPU-s,
        # which is why the lab once raised the bound to 60 s.
        if env:
            lines.append("env = { " + ", ".join(f"{k} = {toml_str(v)}" for k, v in env.items()) + " }")
        lines.append("")
    lines += ["[analytics]", "enabled = false", "", "[features]",
              "enable_request_compression = false", ""]
    return "\n".join(lines)


def command(bin_dir: Path | str, root: Path, name: str, first: bool) -> list[str]:
    """The first Codex TUI runs plain `codex`: it auto-starts the shared daemon, whose
    default provider (config.toml) is this session's stub port. Later TUIs attach to
    that daemon with `--remote` and pick their own provider per thread; a plain TUI
    with any `-c`/`--profile` override would host its thread in-process instead.
    """
    exe = str(Path(bin_dir) / BINARY)
    if first:
        return [exe]
    return [exe, "--remote", f"unix://{control_socket(root)}", "-c", f"model_provider={toml_str(provider_id(name))}"]


# ---- what the lab reads of the shared home ---------------------------------------------------------


def thread_names(root: Path) -> dict[str, str]:
    """thread id -> current thread name, read by the Codex agent's own reader of session_index.jsonl."""
    rows = read_session_index(home(root) / "session_index.jsonl")
    return {tid: str(r["thread_name"]) for tid, r in rows.items() if r.get("thread_name") is not None}


def locks(root: Path) -> set[str]:
    d = home(root) / "thread-writer-locks"
    try:
        return {p.name[:-5] for p in d.iterdir() if p.name.endswith(".lock") and not p.name.startswith(".")}
    except OSError:
        return set()


def daemon_pid(root: Path) -> int | None:
    try:
        pid = int(json.loads((home(root) / "app-server-daemon" / "daemon.pid").read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if sysproc.is_alive(pid) else None


def _exe_name(pid: int) -> str:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        args = sysproc.read_cmdline(pid) or []
        return os.path.basename(args[0]) if args else ""


def tui_pid(pane_pid: int) -> int | None:
    """The native codex TUI: the pane runs the npm node wrapper, which spawns it (the Codex
    agent's rule for which process is a TUI, `is_codex_tui`)."""
    if _exe_name(pane_pid) == BINARY:
        return pane_pid
    for child in sysproc.children_map(sysproc.process_table()).get(pane_pid, []):
        if _exe_name(child) == BINARY or is_codex_tui((sysproc.read_cmdline(child) or [])[:1]):
            return child
    return None


def rollout(root: Path, thread_id: str) -> str | None:
    db = home(root) / "state_5.sqlite"
    if db.exists():
        try:
            con = sqlite3.connect(f"file:{pathname2url(str(db))}?mode=ro", uri=True, timeout=2)
            try:
                row = con.execute("SELECT rollout_path FROM threads WHERE id = ?", (thread_id,)).fetchone()
            finally:
                con.close()
            if row and row[0]:
                return str(row[0])
        except sqlite3.Error:
            pass
    hits = sorted((home(root) / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return str(hits[-1]) if hits else None


def thread_shell_snapshots(root: Path, thread_id: str) -> list[Path]:
    """The thread's shell snapshot files (`$CODEX_HOME/shell_snapshots/<thread>.<nonce>.sh`)."""
    if not thread_id:
        return []
    try:
        return list((home(root) / "shell_snapshots").glob(f"{thread_id}.*.sh"))
    except OSError:
        return []


# ---- the files, the daemon's package cache, the command ---------------------------------------------


def files(ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
    providers = {n: ctx.base_urls[n] for n in names if n in ctx.base_urls}
    if not providers:
        return {}
    sandbox = os.environ.get("RELAY_LAB_CODEX_SANDBOX") or "danger-full-access"
    delay = os.environ.get("RELAY_LAB_CODEX_UNLOAD_DELAY")
    mcp = (ctx.mcp_command[0], ctx.mcp_command[1:], ctx.mcp_env) if ctx.mcp_command else None
    return {home(ctx.root) / "config.toml": config(providers, [str(ctx.workdir(n)) for n in providers],
                                                   sandbox=sandbox, shell_path=ctx.env.get("PATH"), mcp=mcp,
                                                   mcp_server=ctx.mcp_server,
                                                   unload_delay=int(delay) if delay else None)}


def restore_packages(root: Path, version: str, progress: Callable[[str], object]) -> None:
    """Move the cached daemon package copy back into CODEX_HOME (a rename: instant)."""
    cache, dest = packages_cache(root), packages(root)
    if not cache.exists() or dest.exists():
        return
    try:
        target = os.readlink(cache / "app-server-daemon" / "current")
    except OSError:
        target = ""
    if not target.startswith(f"{dest}/app-server-daemon/releases/{version}-"):
        shutil.rmtree(cache, ignore_errors=True)  # another version or another lab path
        return
    os.rename(cache, dest)
    progress("codex daemon packages restored from cache")


def save_packages(root: Path) -> None:
    src, cache = packages(root), packages_cache(root)
    if not (src / "app-server-daemon" / "current").is_symlink() or cache.exists():
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.rename(src, cache)
    except OSError:
        pass


def launch(ctx: LabContext, name: str, first: bool, resume: str | None = None) -> LabLaunch:
    """The TUI's command; `known`: the threads that exist before it starts (its own is the new one)."""
    cmd = command(ctx.bin_dir, ctx.root, name, first)
    if resume:  # the same thread again: its id, name, rollout and queue stay valid
        cmd += ["resume", resume]
    return LabLaunch(command=tuple(cmd), known=tuple(sorted(set(thread_names(ctx.root)) | locks(ctx.root))),
                     resumes=resume)


def start_daemon(ctx: LabContext) -> None:
    """`codex app-server daemon start` in the lab's environment (and network namespace)."""
    try:
        proc = subprocess.run([*ctx.run_prefix, str(ctx.bin_dir / BINARY), "app-server", "daemon", "start"],
                              env=ctx.env, cwd=ctx.root, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"cannot start the Codex daemon: {exc}") from exc
    if proc.returncode != 0 or daemon_pid(ctx.root) is None:
        raise LabError(f"the Codex daemon did not start (exit {proc.returncode}): "
                       f"{screen_tail(proc.stderr or proc.stdout, 2)[:300]}")


def stop(ctx: LabContext) -> None:
    """Ask the daemon to stop (it and its pid-update-loop survive the panes' hangup)."""
    exe = ctx.bin_dir / BINARY
    if (home(ctx.root) / "app-server-daemon" / "daemon.pid").exists() and exe.exists():
        try:
            subprocess.run([str(exe), "app-server", "daemon", "stop"], env=ctx.env, cwd=ctx.root,
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass


def cleanup(ctx: LabContext) -> None:
    """The daemon's sockets under /tmp/codex-daemon-<uid>/ (even when CODEX_HOME is gone), and its
    package copy into the cache."""
    h = home(ctx.root)
    for link_dir in (h / "app-server-control", h / "app-server-daemon"):
        try:
            links = list(link_dir.glob("*.sock"))
        except OSError:
            links = []
        for link in links:
            _remove_daemon_target(link)
    for target in daemon_targets(ctx.root):
        remove(target)
        remove(Path(str(target) + ".lock"))
        try:
            target.parent.rmdir()
        except OSError:
            pass
    save_packages(ctx.root)


def _remove_daemon_target(link: Path) -> None:
    """Codex control sockets are symlinks into /tmp/codex-daemon-<uid>/: remove ours there."""
    try:
        target = Path(os.readlink(link))
    except OSError:
        return
    if not target.is_absolute():
        target = link.parent / target
    base = Path(f"/tmp/codex-daemon-{os.getuid()}")
    if target.parent == base or target.parent.name == f"codex-daemon-{os.getuid()}":
        remove(target)
        remove(Path(str(target) + ".lock"))
        try:
            target.parent.rmdir()  # only if empty: other Codex homes may share it
        except OSError:
            pass
    remove(link)


# ---- readiness -----------------------------------------------------------------------------------


def _idle(reading: ScreenReading | None) -> bool:
    """Idle by the classifier, and not a TUI waiting for a daemon that is gone (`Reconnecting`)."""
    return reading is not None and reading.kind == "idle" and "reconnecting" not in reading.blockers


def _clear_composer(ops: LabOps) -> None:
    """Ctrl-U, then a pause (keystroke pacing, not a wait for anything) before the next typing."""
    ops.keys("C-u")
    time.sleep(0.2)


def _press_enter(ops: LabOps) -> None:
    """Enter in its own tmux call after a pause: Codex drops an Enter in the same burst as the text."""
    time.sleep(0.1)
    ops.keys("Enter")


def _rename(root: Path, ops: LabOps, name: str, deadline: float, exclude: Iterable[str]) -> str:
    """Type `/rename <name>` into a fresh idle Codex TUI; return the thread id it names."""
    cmd = rename_line(name)
    exclude = set(exclude)
    attempts = 0

    def idle_reading() -> ScreenReading | None:
        reading = ops.reading()
        return reading if _idle(reading) else None

    def renamed() -> str | None:
        return next((tid for tid, tname in thread_names(root).items() if tname == name and tid not in exclude), None)

    def composer() -> bool | None:
        reading = ops.reading()
        return True if reading is not None and reading.composer_text == cmd else None

    while time.monotonic() < deadline:
        reading = poll_until_sync(idle_reading, timeout=deadline - time.monotonic(), interval=0.2)
        if reading is None:
            break
        text = reading.composer_text or ""
        if text != cmd:
            if attempts >= 6:
                raise LabError(f"codex {name}: could not type {cmd!r}; screen: {screen_tail(ops.capture())}")
            if text.startswith("/") or attempts:
                _clear_composer(ops)
            attempts += 1
            ops.keys(cmd, literal=True)
            poll_until_sync(composer, timeout=2.0, interval=0.1)
            continue
        _press_enter(ops)
        tid = poll_until_sync(renamed, timeout=5.0, interval=0.05)
        if tid is not None:
            return tid
        ops.progress(f"  {name}: rename not recorded yet, retrying")
    raise LabError(f"codex {name}: /rename not recorded in session_index.jsonl before the deadline; "
                   f"screen: {screen_tail(ops.capture())}")


def wait_idle(root: Path, name: str, thread_id: str | None, ops: LabOps, deadline: float) -> None:
    def idle_with_lock() -> bool | None:
        reading = ops.reading()
        return True if (thread_id in locks(root) and _idle(reading)
                        and not (reading and reading.composer_text or "").startswith("/")) else None

    if not poll_until_sync(idle_with_lock, timeout=deadline - time.monotonic(), interval=0.1):
        raise LabError(f"{name}: codex not idle with its thread lock before the deadline; "
                       f"screen: {screen_tail(ops.capture())}")


def wait_snapshot(root: Path, name: str, thread_id: str, deadline: float) -> None:
    """Wait until the new thread's shell snapshot is on disk, before the next thread starts.

    Why (Codex 0.171.0, measured; adapters/codex.md): every new thread's snapshot task first
    deletes each *other* snapshot whose thread has no rollout file yet, and a fresh thread's
    rollout is written only on its first persisted item (here the lab's `/rename`). Threads
    started together therefore delete each other's fresh snapshots; a thread left without
    one runs its commands as `bash -lc`, whose /etc/profile resets PATH, so the configured
    `[shell_environment_policy] set PATH` is lost (`relay: command not found`, exit 127).
    Named (rollout on disk) and snapshotted before the next starts, no thread's snapshot is
    ever without its rollout when another thread's clean-up runs."""
    if poll_until_sync(lambda: thread_shell_snapshots(root, thread_id) or None,
                       timeout=deadline - time.monotonic(), interval=0.1):
        return
    raise LabError(f"{name}: Codex took no shell snapshot of thread {thread_id} before the deadline "
                   f"(nothing in {home(root) / 'shell_snapshots'}); its commands would run without the "
                   "lab's PATH")


def wait(ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
    """A fresh TUI: its composer shows and its thread exists (a lock beyond those known before it
    started), then it is named from inside (the lab setting itself up), idle with its lock held, and
    its shell snapshot is on disk. A resumed one (`codex resume <thread>`): a daemon runs, idle with
    that thread's lock."""
    root = ctx.root
    if launch.resumes:
        return _wait_resumed(root, name, launch.resumes, ops, deadline)
    known = set(launch.known)
    said = False
    cold = not known and not (packages(root) / "app-server-daemon" / "current").exists()

    def tui_ready() -> bool | None:
        nonlocal said
        ops.pane()
        if _idle(ops.reading()) and locks(root) - known:
            return True
        if not said and cold and packages(root).exists() and not (home(root) / "thread-writer-locks").exists():
            ops.progress(f"  {name}: codex daemon installing its package copy (first start only)")
            said = True
        return None

    if not poll_until_sync(tui_ready, timeout=deadline - time.monotonic(), interval=0.1):
        raise LabError(f"{name}: codex TUI not ready before the deadline; screen: {screen_tail(ops.capture())}")
    tid = _rename(root, ops, name, deadline, known)
    _, pane_pid = ops.pane()
    pid = tui_pid(pane_pid)
    wait_idle(root, name, tid, ops, deadline)
    wait_snapshot(root, name, tid, deadline)
    return LabReady(pid=pid, proc_start=sysproc.proc_start(pid) if pid else None, address=tid,
                    facts=_facts(daemon_pid(root), provider_id(name)), note=f"codex thread {tid} named")


def _wait_resumed(root: Path, name: str, thread_id: str, ops: LabOps, deadline: float) -> LabReady:
    ops.pane()
    # a resumed TUI after the daemon died starts it anew
    if poll_until_sync(lambda: daemon_pid(root), timeout=deadline - time.monotonic(), interval=0.1) is None:
        raise LabError(f"{name}: no Codex daemon came up for the resumed thread; screen: {screen_tail(ops.capture())}")
    wait_idle(root, name, thread_id, ops, deadline)
    _, pane_pid = ops.pane()
    pid = tui_pid(pane_pid)
    return LabReady(pid=pid, proc_start=sysproc.proc_start(pid) if pid else None, address=thread_id,
                    facts=_facts(daemon_pid(root), provider_id(name)), note=f"codex thread {thread_id} resumed")


def settled(ctx: LabContext, sessions: Sequence[tuple[LabReady, LabOps]], deadline: float) -> None:
    """All renamed: each still idle with its thread loaded, and each still has its shell snapshot."""
    for rec, ops in sessions:
        wait_idle(ctx.root, ops.name, rec.address, ops, deadline)
    lost = [ops.name for rec, ops in sessions if not thread_shell_snapshots(ctx.root, rec.address or "")]
    if lost:
        raise LabError(f"Codex deleted the shell snapshot of {', '.join(lost)} while the lab started, so its "
                       "commands would run without the lab's PATH: `relay lab down`, then `relay lab up`")


def revive(ctx: LabContext, dead: Sequence[tuple[LabReady, LabOps]], deadline: float) -> list[LabReady]:
    """Only the daemon died: its TUIs wait ("Reconnecting…") and reconnect by themselves once it runs
    again (codex.md section 0), so they are kept, not replaced."""
    waiting = [(r, ops) for r, ops in dead if r.pid and sysproc.is_alive(r.pid, r.proc_start)]
    if not waiting or daemon_pid(ctx.root) is not None:
        return []
    waiting[0][1].progress(f"the Codex daemon is gone: starting it again ({', '.join(ops.name for _, ops in waiting)} "
                           "reconnect by themselves)")
    start_daemon(ctx)
    out = []
    for r, ops in waiting:
        wait_idle(ctx.root, ops.name, r.address, ops, deadline)
        out.append(r.model_copy(update={"facts": {**r.facts, "daemon_pid": daemon_pid(ctx.root)}, "alive": True}))
        ops.progress(f"  {ops.name}: codex thread {r.address} reconnected (tui pid {r.pid} kept)")
    return out


def refresh(ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
    """The TUI (found again under the pane if it was replaced), the daemon, the thread's rollout and
    its name now (a thread renamed from inside renames its lab session)."""
    upd: dict[str, Any] = {}
    pid, start = prior.pid, prior.proc_start
    if not dead and not sysproc.is_alive(pid, start):
        pid = tui_pid(pane_pid)
        start = sysproc.proc_start(pid) if pid else None
        upd.update(pid=pid, proc_start=start)
    daemon = daemon_pid(ctx.root)
    upd["facts"] = {**prior.facts, "daemon_pid": daemon}
    if prior.address:
        upd["evidence_file"] = rollout(ctx.root, prior.address) or prior.evidence_file
        name = thread_names(ctx.root).get(prior.address)
        if name:
            upd["name"] = name
    upd["alive"] = not dead and sysproc.is_alive(pid, start) and daemon is not None
    return prior.model_copy(update=upd)


def outlives_panes(argv: Sequence[str]) -> bool:
    """The daemon and its pid-update-loop (children of the first TUI) survive SIGHUP: `stop` ends them."""
    return "app-server" in argv


class CodexLab(LabDriverBase):
    """Its `LabDriver` (agents/kind.py): the functions above; its sessions share one daemon the lab
    starts with the first, stops at `down`, and revives under live clients."""

    spec = SPEC

    def files(self, ctx: LabContext, names: Sequence[str]) -> dict[Path, str]:
        return files(ctx, names)

    def prepare(self, ctx: LabContext, names: Sequence[str], progress: Callable[[str], object]) -> None:
        restore_packages(ctx.root, self.facts.verified_versions()[-1], progress)

    def launch(self, ctx: LabContext, name: str, first: bool) -> LabLaunch:
        return launch(ctx, name, first)

    def resume(self, ctx: LabContext, name: str, first: bool, prior: LabReady) -> LabLaunch:
        return launch(ctx, name, first, resume=prior.address)

    def wait(self, ctx: LabContext, name: str, launch: LabLaunch, ops: LabOps, deadline: float) -> LabReady:
        return wait(ctx, name, launch, ops, deadline)

    def settled(self, ctx: LabContext, sessions: Sequence[tuple[LabReady, LabOps]], deadline: float) -> None:
        settled(ctx, sessions, deadline)

    def refresh(self, ctx: LabContext, prior: LabReady, pane_pid: int, dead: bool) -> LabReady:
        return refresh(ctx, prior, pane_pid, dead)

    def revive(self, ctx: LabContext, dead: Sequence[tuple[LabReady, LabOps]], deadline: float) -> list[LabReady]:
        return revive(ctx, dead, deadline)

    def outlives_panes(self, argv: Sequence[str]) -> bool:
        return outlives_panes(argv)

    def stop(self, ctx: LabContext) -> None:
        stop(ctx)

    def cleanup(self, ctx: LabContext) -> None:
        cleanup(ctx)

    def describe(self, rec: LabReady) -> str:
        if not rec.address:
            return super().describe(rec)
        return f"thread {rec.address} (tui pid {rec.pid}, daemon {lab_facts(rec).daemon_pid})"

    def adopt(self, old: Mapping[str, Any]) -> dict[str, Any]:
        """Before `facts`, lab.json kept the thread, daemon and provider flat (its session id was empty)."""
        return {**({"session_id": old["thread_id"]} if old.get("thread_id") else {}),
                "facts": _facts(old.get("daemon_pid"), old.get("provider"))}

    def shell_call(self, cmd: str, why: str) -> LabCall | None:
        return shell_call(cmd)

    def rename_line(self, name: str) -> str | None:
        return rename_line(name)

    def scripted_call(self, call: LabCall) -> LabCall:
        """Its shell tool waits `SHELL_YIELD_MS` for output unless the script says otherwise."""
        if call.name != SHELL_TOOL or "yield_time_ms" in call.input:
            return call
        return call.model_copy(update={"input": {**call.input, "yield_time_ms": SHELL_YIELD_MS}})
