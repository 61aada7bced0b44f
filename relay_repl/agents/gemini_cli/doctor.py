"""`relay doctor` rows for Gemini CLI: its home, its settings, its live sessions (read-only)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from relay_repl.agents.gemini_cli.chats import HOME_ENV, gemini_dir
from relay_repl.agents.gemini_cli.provider import BINARY, GeminiProvider
from relay_repl.core.check import Check

FOOTER_ITEM = "session-id"


async def check_gemini(env: Mapping[str, str] | None = None) -> list[Check]:
    environ = dict(os.environ if env is None else env)
    gdir = gemini_dir(environ)
    src = f"from ${HOME_ENV}" if environ.get(HOME_ENV) else "the default"
    if not gdir.is_dir():
        # no home yet means no Gemini CLI session has run here: nothing to list, not a fault (as for
        # Claude Code without a sessions folder), and nothing read either: skipped, not passed
        return [Check.skip("Gemini CLI home", f"no {gdir} yet ({src}): no Gemini CLI session has run here (start "
                           f"Gemini CLI once, or set {HOME_ENV}, to list its sessions)")]
    if not os.access(gdir, os.R_OK | os.X_OK):
        return [Check(name="Gemini CLI home", ok=False, detail=f"read {gdir}: not readable",
                      fix=f"run relay as the user who owns {gdir}")]
    out = [Check(name="Gemini CLI home", ok=True, detail=f"found {gdir} ({src})")]
    path = gdir / "settings.json"
    from relay_repl.core.errors import FileProblem
    from relay_repl.core.file_shape import json_value
    from relay_repl.store.loader import read_text

    fix = "fix the JSON (Gemini CLI itself refuses to start on it)"
    try:  # the client's file, through the one loader: a FIFO, a directory, bytes not UTF-8 are a finding
        text = read_text(path, fix, missing_ok=True)
        cfg = json_value(text, path, fix) if text else {}
    except FileProblem as exc:
        out.append(Check(name="Gemini CLI settings", ok=False,
                         detail=f"read {exc.path}: {exc.problem}" + (f" (line {exc.line})" if exc.line else ""), fix=exc.fix))
        cfg = {}
    else:
        ui = cfg.get("ui") if isinstance(cfg, dict) else None
        footer = ui.get("footer") if isinstance(ui, dict) else None
        items = footer.get("items") if isinstance(footer, dict) else None
        shown = isinstance(items, list) and FOOTER_ITEM in items
        out.append(Check(name="Gemini CLI settings", ok=True, detail=(
            f"read {path}: the footer shows the session id, so a pane is tied to its chat file exactly" if shown else
            f"read {path}: the footer does not show the session id; a pane is tied to its chat file by start time "
            f"(add \"{FOOTER_ITEM}\" to ui.footer.items to make it exact)")))
    found = await GeminiProvider(env=environ).discover()
    if not found and shutil.which(BINARY, path=environ.get("PATH")) is None:
        out.append(Check.skip("Gemini CLI sessions", f"{BINARY} not found, and no Gemini CLI process in /proc"))
        return out
    untied = [t.spec for t in found if not t.evidence_file]
    out.append(Check(name="Gemini CLI sessions", ok=not untied,
                     detail=f"read /proc and {gdir}: {len(found)} live session(s)"
                            + (f"; no chat file for {', '.join(untied)}" if untied else ""),
                     fix="start each session in its own directory, or show the session id in the footer (above)"))
    return out
