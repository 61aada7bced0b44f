"""`relay targets` and `relay notebook run` start the Claude listing (`claude agents --json`, a node
process of its own) before their heavy imports, so the two overlap. That only works if importing
the prefetch module imports nothing heavy: when it lived in `relay_repl.agents`, importing it ran
the agents package first (pydantic and every agent module, ~0.2 s), and the listing started only
after them; `relay notebook run` then waited on it before its first cell (issue 18's start goal)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import subprocess, sys
seen = []
real = subprocess.Popen
class Probe(real):
    def __init__(self, args, *a, **k):
        if list(args)[1:] == ["agents", "--json"]:  # the listing starts: what is imported by now?
            seen.append(sorted(m for m in ("pydantic", "relay_repl.agents", "relay_repl.session") if m in sys.modules))
        super().__init__(args, *a, **k)
subprocess.Popen = Probe
from relay_repl.frontends.cli import main
code = main(["--fake", "notebook", "run", "nb.py", "--dry-run"])
print("LISTING STARTED WITH", seen, "EXIT", code)
"""


def test_the_claude_listing_starts_before_the_heavy_imports(tmp_path, relay_home):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\necho '[]'\n")
    claude.chmod(0o755)
    (tmp_path / "claude-config" / "sessions").mkdir(parents=True)
    (tmp_path / "nb.py").write_text('# %% first\nprint("FIRST CELL")\n')
    env = {"HOME": str(tmp_path), "RELAY_HOME": str(relay_home), "PATH": f"{bin_dir}:/usr/bin:/bin",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "LANG": "C.UTF-8"}
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert "FIRST CELL" in r.stdout, (r.stdout, r.stderr)
    assert "LISTING STARTED WITH [[]] EXIT 0" in r.stdout, (r.stdout, r.stderr[-2000:])

