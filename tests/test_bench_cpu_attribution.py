"""bench/recipes' default "CPU-s by program": a process's own work and what its exited children cost are
two figures, each under the name --by-process gives (bench/turn_cpu.category), not one sum under a comm."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.recipes import cpu_by_program, cpu_spent, top_programs
from bench.turn_cpu import category, cmdline_of


def test_a_shells_reaped_children_are_not_the_shells_own_work():
    """The case that printed `bash 3.19`: a shell that used nothing itself but reaped a 3.19 CPU-s job."""
    before = {(10, "5"): ("shell (bash)", 1.00, 0.00), (11, "6"): ("codex (client)", 2.00, 0.10)}
    after = {(10, "5"): ("shell (bash)", 1.00, 3.19), (11, "6"): ("codex (client)", 2.50, 0.30),
             (12, "9"): ("relay mcp", 0.04, 0.00)}  # started during the run: all of its CPU is the run's
    spent = cpu_spent(before, after)
    assert spent["shell (bash)"] == 0.0 and round(spent["shell (bash): exited children"], 2) == 3.19
    assert round(spent["codex (client)"], 2) == 0.50 and round(spent["codex (client): exited children"], 2) == 0.20
    assert round(spent["relay mcp"], 2) == 0.04
    assert top_programs(before, after) == ("shell (bash): exited children 3.19, codex (client) 0.50, "
                                           "codex (client): exited children 0.20, relay mcp 0.04")


def test_a_real_child_that_exits_is_counted_apart_under_its_parents_name():
    me = (os.getpid(), open(f"/proc/{os.getpid()}/stat").read().rsplit(")", 1)[1].split()[19])
    before = cpu_by_program()
    burn = "import time\nwhile time.process_time() < 0.3: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)  # ~0.3 CPU-s, reaped by this process
    after = cpu_by_program()
    name = after[me][0]
    assert name == category(open(f"/proc/{os.getpid()}/comm").read().strip(), cmdline_of(os.getpid()))
    spent = cpu_spent(before, after)
    assert spent[f"{name}: exited children"] >= 0.29  # the child's 0.3 CPU-s, under its parent, apart
