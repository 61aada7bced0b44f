"""Gemini CLI discovery: live `gemini.js` processes, their projects, chat files and panes.

Gemini CLI keeps no registry of running sessions and holds no lock (adapters/gemini-cli.md
"Registry and listing", "Liveness"), so discovery starts from the kernel's process table.

The rules (the process, its chat file, its pane, its name, its state) are written once, in
sessions.py, where the steps live (standard library only: `relay targets`' plain path runs
them too, plain_listing.py); this module runs them on the roster and builds the models.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from relay_repl.agents.gemini_cli.detail import GeminiDetail
from relay_repl.agents.gemini_cli.own import SCRIPT as SCRIPT, is_gemini as is_gemini, under_gemini
from relay_repl.agents.gemini_cli.sessions import (
    KIND as KIND,
    PREFIX as PREFIX,
    START_SLACK as START_SLACK,
    TERMINALS as TERMINALS,
    Session as Session,
    find_sessions,
    names,
    package_version as package_version,
    place_panes,
    read_screens,
    start_epoch as start_epoch,
    state,
    target_fields,
    tie_chats,
)
from relay_repl.core.target import Me, Target
from relay_repl.system import loopless
from relay_repl.system.panes import PaneRoster
from relay_repl.system.proc import ancestors, process_table, read_cmdline, read_stat

if TYPE_CHECKING:  # annotations only: core/inbound.py loads on first use, off the `relay targets` path
    from relay_repl.core.inbound import PeerIdentity

BINARY = "gemini"
# Gemini CLI 0.61.0 runs headless, not in its TUI, when CI == "true" or GITHUB_ACTIONS == "true"
# (`isHeadlessMode`, unless GEMINI_CLI_INTEGRATION_TEST == "true"): in a pane it then prints "No input
# provided via stdin" and exits. A lab pane started from a CI job must not inherit them
# (adapters/gemini-cli.md, "Environment"); `relay fidelity` checks it (fidelity.py).
HEADLESS_ENV = ("CI", "GITHUB_ACTIONS")

# The steps live in sessions.py (`relay targets`' standard-library path runs them too); these names stay.
_sessions, _tie_chats, _names, _state = find_sessions, tie_chats, names, state


class GeminiProvider:
    """Gemini CLI sessions of this uid, found through /proc (no registry exists)."""

    kind = KIND

    def __init__(self, env: Mapping[str, str] | None = None, panes: PaneRoster | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.panes = panes or PaneRoster(env=self.env)

    def __repr__(self) -> str:
        return "<GeminiProvider /proc>"

    async def sessions(self) -> list[Session]:
        table = await self.panes.processes()
        found = await loopless.to_thread(find_sessions, table, self.env)
        if not found:
            return []
        shots = await self.panes.capture(place_panes(found, await self.panes.panes(), table))
        footers = read_screens(found, shots)
        await loopless.to_thread(tie_chats, found, footers)
        return found

    async def discover(self) -> list[Target]:
        from relay_repl.agents.versions import version_status

        found = await self.sessions()
        return [Target(**fields, detail=GeminiDetail(**detail))
                for fields, detail in target_fields(found, lambda v: version_status(KIND, v))]

    # -- origin verdicts (agents/origin.py) ----------------------------------------------------

    def _live(self) -> tuple[list[Session], dict[int, str]]:
        """Live sessions with their chats (by start time) and names (blocking)."""
        sessions = _sessions(process_table(), self.env)
        _tie_chats(sessions, {})
        return sessions, _names(sessions)

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        """The Gemini CLI session process `pid` is (its wrapper or relaunched worker), or None.

        The process is the kernel's fact; which chat it writes is read as discovery reads it:
        Gemini records no kernel provenance, so the claimable strings are its name, its session
        id (and 8-hex prefix) and its pid."""
        if read_stat(pid) is None or not is_gemini(read_cmdline(pid)):
            return None
        sessions, names = self._live()
        s = next((x for x in sessions if pid in (x.pid, x.worker)), None)
        if s is None:
            return None
        name = names[s.pid]
        claim = {name, str(s.pid)}
        if s.chat is not None:
            claim |= {s.chat.session_id, s.chat.short}
        from relay_repl.core.inbound import PeerIdentity

        return PeerIdentity(kind=KIND, spec=f"{PREFIX}:{name}", pid=s.pid, claimable=frozenset(claim),
                            evidence=(f"pid {pid} is gemini.js session process {s.pid} (cwd {s.cwd}"
                                      + (f", chat {s.chat.path.name}" if s.chat else "") + ")"))

    def claimed_session(self, address: str) -> str | None:
        """The live session a claimed address names (its name or session id), or None."""
        sessions, names = self._live()
        for s in sessions:
            if address in {names[s.pid], *((s.chat.session_id, s.chat.short) if s.chat else ())}:
                return f"{PREFIX}:{names[s.pid]}"
        return None

    def own_address(self) -> Me | None:
        """This process's address when it runs under a Gemini CLI session (a `relay reply` its shell tool
        started), else None. Gemini CLI gives its tools no variable naming the session, so the session
        is found the way the inbox will judge the answer: our own ancestry, from /proc."""
        chain = ancestors(os.getpid())
        if not under_gemini(chain):
            return None
        sessions, names = self._live()
        for p in chain:
            s = next((x for x in sessions if p in (x.pid, x.worker)), None)
            if s is not None:
                return Me(role="agent", agent=KIND, address=names[s.pid])
        return None
