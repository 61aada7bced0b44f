"""Python's cyclic garbage collector paused while a one-liner starts, resumed once its plan is shown.

Why: a cold `relay send` or `relay run` allocates a great many objects before its first plan
(pydantic building its models, the modules' own objects, the parsed adapter files) and almost
all of them live as long as the process. The collector, run every 700 net allocations, scanned
them ~85 times before the plan: ~12 ms of ~220 ms of CPU at load 3 (issue 40, measured with
`gc.callbacks`), for no garbage worth collecting. Reference counting still frees everything
acyclic meanwhile.

`paused_here()` records that the command's start turned it off (frontends/entry.py, for the
commands it names); `resume()` turns it on again when a plan is shown (session/core/gating.py
before the operator is asked; session/core/sending.py for a plan refused at preflight), after
freezing what survived the start (`gc.freeze`: moved to the permanent generation, so later
collections do not rescan it, the pattern the gc documentation gives for a process that has
finished starting). A command that shows no plan soon (a recipe waiting before its first send)
gets the collector back after `LIMIT` seconds all the same, from a timer: it is never off longer.
`relay serve --stdio` (a host's relay, started per ssh channel) pauses it too: its first send's plan
is waited for by the operator's relay on a cold channel, after its session's imports (issue 33: ~90
collections, ~10 ms of its CPU, before that plan); a channel that only lists or checks gets it back
from the timer. Any other process (the REPL, the MCP server) never turns it off.
"""

from __future__ import annotations

import gc
import threading

LIMIT = 2.0
"""Seconds after which the collector is back even if no plan was shown (a plan takes ~0.2 s)."""

_paused = False
_timer: threading.Timer | None = None


def paused_here() -> None:
    """The caller turned the collector off for the start itself (entry.py does, before importing
    anything, this module included: compiling a module from source allocates too); `resume()`
    turns it on again, at the latest `LIMIT` seconds from now."""
    global _paused, _timer
    _paused = True
    _timer = threading.Timer(LIMIT, resume)
    _timer.daemon = True
    _timer.start()


def resume() -> None:
    """Collect cycles again, the start's survivors frozen; a no-op unless the start turned it off."""
    global _paused, _timer
    if _timer is not None and _timer is not threading.current_thread():
        _timer.cancel()
    _timer = None
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
