"""Stopping the lab (`relay lab down`): every process it started, its sockets and registry files.
"""

from __future__ import annotations

import shutil
import time


import relay_repl.lab.procs as procs
from relay_repl.system.remove import remove

from relay_repl.lab.layout import Layout, driver, lab_kinds, tmux_socket_path
from relay_repl.lab.state import load
from relay_repl.lab.client_setup import lab_context
from relay_repl.lab.labenv import Progress, bin_dir, lab_lock, layout
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
    ctx = lab_context(lay, state, bin_dir())
    kinds = lab_kinds()

    # 1. the TUIs: kill the tmux server (SIGHUP to every pane; clients remove their own records)
    pane_pids = [int(p["pane_pid"]) for p in list_panes(lay).values() if p["pane_pid"].isdigit()]
    # Not what a kind stops itself (a daemon the first TUI started): it survives SIGHUP and is
    # stopped properly below. Nor anything below it (the `relay mcp` server a daemon starts for its
    # threads): it lives as long as the daemon, so waiting for it here always ran the whole 5 s
    # bound, on every `lab down`.
    below = [c for p in pane_pids for c in [p, *procs.descendants(p)]]
    outlive = {c for p in below if any(driver(k).outlives_panes(procs.cmdline(p)) for k in kinds)
               for c in [p, *procs.descendants(p)]}
    tui_pids = [c for c in below if c not in outlive]
    if tmux_socket_path(sock_name).exists():
        tmux(lay, "kill-server", check=False)
    left = procs.wait_gone(tui_pids, 5.0)
    if left:
        procs.terminate(left, grace=1.0)

    # 2. what each kind started outside the panes (a daemon): it stops it
    for k in kinds:
        driver(k).stop(ctx)

    # 3. every remaining lab process: stub, daemon helpers, tool children, stragglers
    extra = [state.stub.pid] if state and state.stub.pid and procs.is_alive(state.stub.pid) else []
    homes = {var: (str(lay.root / d), k.facts.pin().binary) for k in kinds for var, d in driver(k).spec.homes.items()}
    rest = set(procs.lab_processes(lay.root, lay.home, netns_id, client_homes=homes)) | set(extra)
    if rest:
        procs.terminate(sorted(rest))
    again = procs.lab_processes(lay.root, lay.home, netns_id, client_homes=homes)
    if again:
        procs.terminate(again, grace=0.5)

    # 4. sockets outside the lab dir: the tmux server's, and each kind's (and what a kind keeps for
    # the next lab goes into the cache)
    remove(tmux_socket_path(sock_name))
    for k in kinds:
        driver(k).cleanup(ctx)

    # 5. drop the runtime state (the cache stays)
    for p in list(lay.root.iterdir()) if lay.root.exists() else []:
        if p == lay.cache:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            remove(p)
    progress(f"cleaned lab {lay.root} in {time.monotonic() - t0:.1f}s")
    return True

