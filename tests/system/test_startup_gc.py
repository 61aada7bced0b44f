"""The collector paused for a one-liner's start (system/startup_gc.py): back on when a plan is
shown, and after LIMIT seconds whatever happens (issue 40)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc, time
gc.disable()
import relay_repl.system.startup_gc as s
s.LIMIT = 0.2
s.paused_here()
assert not gc.isenabled()
time.sleep(1.0)  # no plan shown: the timer turns it back on
print(gc.isenabled(), s._paused)
gc.disable()
s.resume()  # not paused any more: it leaves the collector as the caller set it
print(gc.isenabled())
"""


def test_the_collector_comes_back_by_itself_when_no_plan_is_shown():
    cp = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.split() == ["True", "False", "False"]


def test_resume_enables_it_at_once_and_stops_the_timer():
    cp = subprocess.run([sys.executable, "-c", "import gc, threading\ngc.disable()\nimport relay_repl.system.startup_gc as s\n"
                         "s.paused_here()\ns.resume()\n[t.join(2) for t in threading.enumerate() if t is not threading.main_thread()]\n"
                         "print(gc.isenabled(), s._timer, threading.active_count())"],
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.split() == ["True", "None", "1"]
