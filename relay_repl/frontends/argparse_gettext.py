"""argparse's message translations, looked up once per message instead of once per use.

argparse passes every help heading, usage prefix and error through `gettext.gettext`, and
each call walks the locale directories for a `.mo` file (`gettext.find`: a stat per language
variant). `relay`'s parser has ~30 subparsers, so building it made ~90 such walks: about half
of the parser's ~15 ms on every `relay` command, including the cold `relay targets` measured
against `claude agents --json` (cProfile: 93 `gettext.translation` calls, 35 of 69 ms profiled).
The answer only changes with the locale variables or the text domain, so those are part of the
key: what argparse prints is unchanged.
"""

from __future__ import annotations

import argparse
import gettext
import os

_LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
_answers: dict[tuple[str, str, tuple[str | None, ...]], str] = {}


def cached_gettext(message: str) -> str:
    """`gettext.gettext(message)`, remembered for the current text domain and locale variables."""
    key = (message, gettext.textdomain(), tuple(os.environ.get(v) for v in _LOCALE_VARS))
    answer = _answers.get(key)
    if answer is None:
        answer = _answers[key] = gettext.gettext(message)
    return answer


def install() -> None:
    """Make argparse's `_` the cached lookup (idempotent)."""
    argparse._ = cached_gettext  # type: ignore[attr-defined]
