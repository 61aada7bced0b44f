"""`relay doctor` rows for Claude Code: its config dir, its registry, `claude agents --json`."""

from __future__ import annotations

import os
from collections.abc import Mapping

from relay_repl.agents.claude_code.provider import ClaudeProvider
from relay_repl.core.check import Check


async def check_claude(env: Mapping[str, str] | None = None) -> list[Check]:
    """Claude's config dir and registry, and whether `claude agents --json` answers (read-only).

    Each row passes only on what it read or ran: with no config dir there is no registry to read,
    and with no `claude` binary (or no sessions folder, where a first run would write files) the
    listing is not run, so those rows are skipped, never passed."""
    p = ClaudeProvider(env=env)
    sessions = p.config_dir / "sessions"
    out: list[Check] = []
    exe = p._binary()
    if not p.config_dir.is_dir():
        if exe is None:
            out.append(Check.skip("Claude config dir", f"claude not found, and no {p.config_dir}: no Claude Code here"))
        else:
            out.append(Check(name="Claude config dir", ok=False, detail=f"looked for {p.config_dir}: it does not exist",
                             fix="start Claude Code once, or set CLAUDE_CONFIG_DIR to the directory it uses"))
    elif sessions.is_dir() and not os.access(sessions, os.R_OK | os.X_OK):
        out.append(Check(name="Claude config dir", ok=False, detail=f"read {sessions}: not readable",
                         fix=f"run relay as the user who owns {sessions}"))
    else:
        n = len(list(sessions.glob("*.json"))) if sessions.is_dir() else 0
        held = f"registry {sessions} holds {n} session record(s)" if sessions.is_dir() else f"no {sessions} yet"
        out.append(Check(name="Claude config dir", ok=True, detail=f"read {p.config_dir}: {held}"))
    out.append(check_records(p))
    name = "claude agents --json"
    if exe is None:
        out.append(Check.skip(name, f"claude not found ({p.claude_bin or 'on PATH'}): the listing was not run"))
        return out
    listed, how = await p.list_agents()
    if listed is None:
        out.append(Check(name=name, ok=False, detail=f"ran `{exe} agents --json`: {how}",
                         fix="fix the Claude client check above; run `claude agents --json` by hand to see why"))
    elif not sessions.is_dir():
        out.append(Check.skip(name, f"not run: no {sessions} (no Claude session has run here; a first "
                                    "`claude agents` would write files)"))
    else:
        out.append(Check(name=name, ok=True, detail=f"ran `{exe} agents --json`: {len(listed)} live session(s)"))
    return out


def check_records(p: ClaudeProvider) -> Check:
    """Session records relay cannot read (not JSON, the wrong shape, a FIFO or a directory in their
    place): each such target is listed stale with its reason and never sent to; here they are a
    finding, so an operator sees them without reading every row of `relay targets`."""
    name = "Claude session records"
    sessions = p.config_dir / "sessions"
    if not sessions.is_dir():
        return Check.skip(name, f"no {sessions}: no record to read")
    _, broken = p._read_records()
    if not broken:
        return Check(name=name, ok=True, detail=f"read {sessions}: every record in the registry reads as one")
    first = sorted(broken.items())[0][1]
    more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
    return Check(name=name, ok=False, detail=f"{len(broken)} record(s) skipped: {first}{more}",
                 fix=f"remove what is not a session record from {p.config_dir / 'sessions'} "
                     "(each skipped target is listed stale with its reason by `relay targets`)")
