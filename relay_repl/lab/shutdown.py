"""Stopping the lab (`relay lab down`): every process it started, its sockets and registry files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path


import relay_repl.lab.procs as procs

from relay_repl.lab.layout import Layout, tmux_socket_path
from relay_repl.lab.state import load
from relay_repl.lab.client_setup import save_codex_packages
from relay_repl.lab.labenv import Progress, bin_dir, glob_in, lab_env, lab_lock, layout
from relay_repl.lab.panes import list_panes, tmux


def down(progress: Progress = print) -> bool:
    """End everything the lab started and remove its runtime state. False if nothing ran."""
    lay = layout()
    from relay_repl.lab import second_host

    second_host.down(lay, progress)  # `relay lab up --hosts 2`: its sshd, lab and namespace
    with lab_lock(lay):
        cleaned = cleanup(lay, progress)
    if not cleaned:
        progress("no lab running")
        return False
    progress("lab down")
    return True


def _lab_present(lay: Layout) -> bool:
    if lay.state_file.exists() or tmux_socket_path(lay.tmux_socket).exists():
        return True
    if any(d.exists() for d in lay.runtime_dirs) or lay.stub_control.exists() or lay.stub_ready.exists():
        return True
    return bool(procs.lab_processes(lay.root, lay.home))


def cleanup(lay: Layout, progress: Progress) -> bool:
    """Stop and remove a lab (running, half-started or crashed). True if there was one."""
    if not _lab_present(lay):
        return False
    t0 = time.monotonic()
    state = load(lay.state_file)
    sock_name = state.tmux_socket if state else lay.tmux_socket
    netns_id = state.netns_id if state else None
    env_ = lab_env(lay)

    # 1. the TUIs: kill the tmux server (SIGHUP to every pane; Claude removes its records)
    pane_pids = [int(p["pane_pid"]) for p in list_panes(lay).values() if p["pane_pid"].isdigit()]
    # Not the Codex daemon and its pid-update-loop (children of the first Codex TUI):
    # they survive SIGHUP and are stopped properly below. Nor anything below the daemon (the
    # `relay mcp` server it starts for its threads): it lives as long as the daemon, so waiting
    # for it here always ran the whole 5 s bound, on every `lab down`.
    below = [c for p in pane_pids for c in [p, *procs.descendants(p)]]
    daemon = {c for p in below if "app-server" in procs.cmdline(p) for c in [p, *procs.descendants(p)]}
    tui_pids = [c for c in below if c not in daemon]
    if tmux_socket_path(sock_name).exists():
        tmux(lay, "kill-server", check=False)
    left = procs.wait_gone(tui_pids, 5.0)
    if left:
        procs.terminate(left, grace=1.0)

    # 2. the Codex daemon: ask it to stop, then end anything else of ours
    codex_bin = bin_dir() / "codex"
    if (lay.codex_home / "app-server-daemon" / "daemon.pid").exists() and codex_bin.exists():
        try:
            subprocess.run([str(codex_bin), "app-server", "daemon", "stop"], env=env_, cwd=lay.root,
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass

    # 3. every remaining lab process: stub, pid-update-loop, tool children, stragglers
    extra = [state.stub.pid] if state and state.stub.pid and procs.is_alive(state.stub.pid) else []
    homes = {"CODEX_HOME": (str(lay.codex_home), "codex"), "CLAUDE_CONFIG_DIR": (str(lay.claude_config), "claude")}
    rest = set(procs.lab_processes(lay.root, lay.home, netns_id, client_homes=homes)) | set(extra)
    if rest:
        procs.terminate(sorted(rest))
    again = procs.lab_processes(lay.root, lay.home, netns_id, client_homes=homes)
    if again:
        procs.terminate(again, grace=0.5)

    # 4. sockets and registry files outside the lab dir
    sock_path = tmux_socket_path(sock_name)
    _unlink(sock_path)
    for link_dir in (lay.codex_home / "app-server-control", lay.codex_home / "app-server-daemon"):
        for link in glob_in(link_dir, "*.sock"):
            _remove_codex_daemon_target(link)
    for target in lay.codex_daemon_targets():  # even if CODEX_HOME is already gone
        _unlink(target)
        _unlink(Path(str(target) + ".lock"))
        try:
            target.parent.rmdir()
        except OSError:
            pass

    # 5. keep the daemon's package copy, drop the runtime state
    save_codex_packages(lay)
    for p in list(lay.root.iterdir()) if lay.root.exists() else []:
        if p == lay.cache:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            _unlink(p)
    progress(f"cleaned lab {lay.root} in {time.monotonic() - t0:.1f}s")
    return True


def _remove_codex_daemon_target(link: Path) -> None:
    """Codex control sockets are symlinks into /tmp/codex-daemon-<uid>/: remove ours there."""
    try:
        target = Path(os.readlink(link))
    except OSError:
        return
    if not target.is_absolute():
        target = link.parent / target
    base = Path(f"/tmp/codex-daemon-{os.getuid()}")
    if target.parent == base or target.parent.name == f"codex-daemon-{os.getuid()}":
        _unlink(target)
        _unlink(Path(str(target) + ".lock"))
        try:
            target.parent.rmdir()  # only if empty: other Codex homes may share it
        except OSError:
            pass
    _unlink(link)


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass

