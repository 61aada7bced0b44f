"""`relay send HOST/kind:name` asks `names_a_host` first (frontends/commands/hosts.py); the spec is
split by core/target.py's `split_spec`, its home, not through session/remote/remote.py, which builds
~35 models before a send to a host has even been planned (issue 33)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from relay_repl.frontends.commands.hosts import names_a_host
print(names_a_host("build-box/claude:alpha"), names_a_host("claude:alpha"), names_a_host("%3"))
print(sorted(m for m in sys.modules if m.startswith("relay_repl.session")))
"""


def test_a_host_spec_is_split_without_the_session_package():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "True False False"
    assert out[1] == "[]"  # the old import loaded relay_repl.session and its remote part
