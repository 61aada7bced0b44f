"""Tab completion of what an operator types into relay's calls: target specs, relay ids, recipes.

Why a completer of our own: ptpython completes Python names, but inside
`session.send("cl` the useful words are the discovered targets (`claude:alpha`,
`codex:beta`, pane ids), inside `session.debugger("` the relay ids sent from here,
and inside `session.run("` the saved recipes. The completer never waits: before the
session is built (or discovery has run) it offers nothing rather than block the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

CALL = re.compile(r"session\.(?P<fn>send|preview|debugger|debug|run|target|forward)\(\s*(?P<q>['\"])(?P<word>[^'\"]*)$")


def recipe_names() -> list[str]:
    try:
        from relay_repl.session.runs.recipes import list_recipes
    except ImportError:  # no recipes in this build
        return []
    try:
        return sorted(p.stem for p, _ in list_recipes())
    except (OSError, ValueError):
        return []


class RelayCompleter(Completer):
    """Completes the first string argument of session.send/debugger/run/… from the live session."""

    def __init__(self, get_session: Callable[[], Any], recipes: Callable[[], list[str]] = recipe_names) -> None:
        self.get_session = get_session
        self.recipes = recipes

    def words(self, fn: str) -> list[str]:
        s = self.get_session()
        if fn == "run":
            return self.recipes()
        if s is None:
            return []
        targets = list(getattr(s, "_targets", []) or [])
        specs = [t.spec for t in targets if t.live] + [t.pane for t in targets if t.live and t.pane]
        if fn in ("debugger", "debug"):
            ids = [d.relay_id for d in reversed(getattr(s, "deliveries", [])) if d.relay_id]
            return list(dict.fromkeys(ids))
        return list(dict.fromkeys(specs))

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        m = CALL.search(document.text_before_cursor)
        if not m:
            return
        word = m.group("word")
        for w in self.words(m.group("fn")):
            if not _literal_safe(w):  # a session's name is its client's (or a peer's) word, inserted as code
                continue
            if w.startswith(word) and w != word:
                yield Completion(w, start_position=-len(word), display_meta=m.group("fn"))


def _literal_safe(word: str) -> bool:
    """Whether `word` can be inserted inside the string literal being typed and stay one string: a
    target named `x"); __import__("os").system("...") #` (a name is whatever the session's registry
    record says) would otherwise complete into code on the operator's own line."""
    return word.isprintable() and not any(c in word for c in "'\"\\")
