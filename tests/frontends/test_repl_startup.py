"""What bare `relay` does before its first prompt, and the `session` stand-in while it loads.

The start-up goal (issue 20: at most 1.1x a bare ptpython, bench/startup.py) holds only while
the work before the prompt is ptpython's own: these tests pin what is imported by then."""

from __future__ import annotations

import ast
import subprocess
import sys
import threading

from relay_repl.frontends.repl import LOADING, LazySession

# ptpython's embed() replaced by one that records the modules loaded when the REPL is about to
# draw its prompt, then leaves at once (as Ctrl-D would); run through the console script's main
PROBE = """
import sys
import ptpython.repl
def embed(**kw):
    seen = sorted(sys.modules)
    async def leave():
        print(seen)
    return leave()
ptpython.repl.embed = embed
sys.argv = ["relay"]
from relay_repl.frontends.entry import main
sys.exit(main())
"""


def test_bare_relay_imports_nothing_heavy_before_its_prompt(tmp_path):
    env = {"RELAY_HOME": str(tmp_path / "relay"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    cp = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    before_prompt = set(ast.literal_eval(cp.stdout.strip().splitlines()[-1]))
    heavy = {"anyio", "pydantic", "sqlite3", "json", "argparse", "relay_repl.frontends.cli",
             "relay_repl.session.session", "relay_repl.frontends.completion"}
    assert heavy & before_prompt == set()
    ours = {m for m in before_prompt if m.startswith("relay_repl")}
    assert ours <= {"relay_repl", "relay_repl.frontends", "relay_repl.frontends.entry", "relay_repl.frontends.repl",
                    "relay_repl.system", "relay_repl.system.pydantic_plugins", "relay_repl.store",
                    "relay_repl.store.paths", "relay_repl.store.ledger_file", "relay_repl.core",
                    "relay_repl.core.errors"}, ours


def test_a_session_still_loading_says_so_and_is_built_on_first_use():
    built = threading.Event()

    class Real:
        me = "operator:relay@here"

        def __repr__(self) -> str:
            return "<Session me=operator:relay@here>"

    def build() -> Real:
        built.set()
        return Real()

    session = LazySession(build)
    assert repr(session) == LOADING and not built.is_set()  # the repr never waits
    assert not hasattr(session, "__pt_repr__") and not built.is_set()  # a printer's probe does not build it
    assert session.me == "operator:relay@here" and built.is_set()  # a real use waits for the real session
    assert repr(session) == "<Session me=operator:relay@here>"
