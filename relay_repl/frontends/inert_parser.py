"""The one argparse class relay's parsers are made of.

Apart from commands/common.py so that a one-liner (`relay targets`, `relay send`) loads only its own
command module (tests/frontends/test_targets_cold.py and test_send_cold.py pin that)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from relay_repl.core.controls import visible


class InertParser(argparse.ArgumentParser):
    """argparse, whose errors quote what was typed (`unrecognized arguments: ...`, `invalid choice:
    ...`) shown inert and cut: an argument a script built from a peer's words printed its escape
    codes raw, and a 100 kB one was echoed whole. Subparsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        shown = visible(message)
        super().error(shown if len(shown) <= 600 else shown[:599] + "…")
