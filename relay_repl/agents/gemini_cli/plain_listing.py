"""Gemini CLI sessions as `relay targets` lists them, with the standard library alone: none.

`provider.GeminiProvider.discover` starts from the process table: a session is a process of our
uid whose argv runs Gemini CLI (own.is_gemini), whose parent does not, that reads a terminal and
whose Gemini home is ours (provider._sessions). When no process is one, it lists nothing, and so
does this. When one is, its state is read from its pane by the screen classifier (screens/,
pydantic models), so this returns None and the caller lists through the models (issue 40: what
is left). Loaded by file (frontends/targets_plain.py; group `relay_repl.plain_listing`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

TERMINALS = ("/dev/pts/", "/dev/tty")  # as provider.TERMINALS


def _gemini_dir(env: Mapping[str, str]) -> str:
    """chats.gemini_dir, spelled as its Path is."""
    from pathlib import Path

    return str(Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~")) / ".gemini")


def listing(env: Mapping[str, str], panes: Any) -> list[Any] | None:
    """[] when no process is a session of ours (GeminiProvider lists nothing then), else None."""
    from relay_repl.system.prefetch import load_by_file
    from relay_repl.system.proc import read_cmdline, read_environ

    own = load_by_file("gemini-cli-own", "relay_repl.agents.gemini_cli.own", "relay_repl.plain_listing")
    if own is None:
        return None
    table = panes.processes()
    ours = os.path.realpath(_gemini_dir(env))
    argvs = {pid for pid, st in table.items()
             if (st.comm in ("node", "gemini") or st.comm.startswith("node")) and own.is_gemini(read_cmdline(pid))}
    for pid in argvs:
        if table[pid].ppid in argvs:
            continue  # a relaunched worker: its wrapper is the session
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.getuid():
                continue
            os.readlink(f"/proc/{pid}/cwd")
            stdin = os.readlink(f"/proc/{pid}/fd/0")
        except OSError:
            continue
        if not stdin.startswith(TERMINALS):
            continue
        penv = read_environ(pid) or {}
        if os.path.realpath(_gemini_dir(penv if ("HOME" in penv or "GEMINI_CLI_HOME" in penv) else env)) == ours:
            return None  # a session of ours: its state needs the screen classifier (the models' path)
    return []
