"""`relay lab ...`: run the REAL pinned agent CLIs (every registered kind with a `lab_driver()`) offline.

The lab is N Claude Code and M Codex (and K Gemini CLI, ...) interactive sessions in a private tmux server,
talking to stub model servers (relay_repl.lab.stubs) on 127.0.0.1, all under one
directory (`paths.lab_dir()`; layout in relay_repl.lab.layout). Where the machine allows
it, everything runs in a private network namespace holding only `lo`, so nothing can
leave loopback; unix sockets (tmux, stub control, agent messaging) still cross.

API (all synchronous and blocking; from async code use `anyio.to_thread.run_sync`):

    install(progress=print) -> dict            pinned clients into the client cache
    up(progress=print, claude=1, codex=1, more={kind: n}) -> LabState   counts by count flag or kind
    up_counts({kind: n}), ensure_lab_counts({kind: n})   the same, one count per lab kind (the CLI's flags)
    status() -> LabState | None                refreshed liveness, pids, panes, transcripts
    down(progress=print) -> bool               False (and "no lab running") if nothing to do
    env() -> dict[str, str]                    variables that point tools at the lab
    attach(name)                               exec tmux attach (does not return)
    ensure_lab(claude=1, codex=1) -> LabState  (counts as for up) the running lab, restarting only dead sessions; else up

Every failure is a LabError with one line.

This module is the lab's API; the work is split by job, one module each: `labenv` (where the
lab lives, its lock, client binaries, environment, network namespace), `panes` (its private
tmux server, and the product's screen classifier reading a pane), `stub_start` (the stub model
server), `client_setup` (directories, configs, the command each session runs), `kind_sessions`
(each kind started, waited for and refreshed through its own lab hooks: agents/<kind>/lab.py),
`startup` (up, ensure_lab, repairing dead sessions), `lab_status` (status, attach) and `shutdown`
(down). None of them names an agent kind.
"""

from __future__ import annotations

from relay_repl.lab.client_setup import launch_command
from relay_repl.lab.install import install
from relay_repl.lab.lab_status import attach, session_name_now, status
from relay_repl.lab.labenv import Progress, bin_dir, env, env_for, layout
from relay_repl.lab.shutdown import down
from relay_repl.lab.startup import ensure_lab, ensure_lab_counts, up, up_counts

__all__ = ["install", "up", "up_counts", "status", "down", "env", "attach", "ensure_lab", "ensure_lab_counts", "layout", "Progress", "bin_dir",
           "env_for", "launch_command", "session_name_now"]
