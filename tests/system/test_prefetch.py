"""`relay targets` and `relay notebook run` start the Claude listing (`claude agents --json`, a node
process of its own) before their heavy imports, so the two overlap. That only works if importing
the prefetch module imports nothing heavy: when it lived in `relay_repl.agents`, importing it ran
the agents package first (pydantic and every agent module, ~0.2 s), and the listing started only
after them; `relay notebook run` then waited on it before its first cell (issue 18's start goal)."""

from __future__ import annotations

from tests.support.probes import run_cold_probe

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
    (tmp_path / "nb.py").write_text('# %% first\nprint("FIRST CELL")\n')
    r = run_cold_probe(tmp_path, relay_home, PROBE, codex_home=False)
    assert "FIRST CELL" in r.stdout, (r.stdout, r.stderr)
    assert "LISTING STARTED WITH [[]] EXIT 0" in r.stdout, (r.stdout, r.stderr[-2000:])



ENTRY_PROBE = """
import subprocess, sys
seen = []
real = subprocess.Popen
class Probe(real):
    def __init__(self, args, *a, **k):
        if list(args)[1:] == ["agents", "--json"]:
            seen.append(sorted(m for m in ("argparse", "relay_repl.frontends.cli", "pydantic") if m in sys.modules))
            print("LISTING STARTED WITH", seen, file=sys.stderr, flush=True)  # relay targets leaves by os._exit
        super().__init__(args, *a, **k)
subprocess.Popen = Probe
sys.argv = ["relay", "targets", "--json"]
from relay_repl.frontends.entry import main
main()
"""


def test_the_console_script_spawns_the_listing_before_importing_the_cli(tmp_path, relay_home):
    """`relay targets` (the console script) spawns `claude agents --json` before even argparse
    and the CLI module are imported: everything before the spawn adds to the cold ratio."""
    r = run_cold_probe(tmp_path, relay_home, ENTRY_PROBE)
    assert "LISTING STARTED WITH [[]]" in r.stderr, (r.stdout, r.stderr[-2000:])
    assert r.stdout.lstrip().startswith("["), r.stdout  # and the listing itself still printed (JSON first)


def test_the_kind_declared_listing_is_started_and_handed_to_its_provider(tmp_path):
    """The listing command is the kind's (entry-point group `relay_repl.prefetch`), and the process
    started early is the one the kind's provider reads: not a second run of the listing."""
    import anyio

    import relay_repl.system.prefetch as prefetch
    from relay_repl.agents.claude_code.provider import ClaudeProvider

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    runs = tmp_path / "runs"
    claude = bin_dir / "claude"
    claude.write_text(f"#!/bin/sh\necho run >> {runs}\necho '[]'\n")
    claude.chmod(0o755)
    cfg = tmp_path / "claude-config"
    (cfg / "sessions").mkdir(parents=True)
    env = {"HOME": str(tmp_path), "PATH": f"{bin_dir}:/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(cfg)}
    prefetch.start(env)
    assert [slot[0] for slot in prefetch._pending] == ["claude-code"], prefetch._pending
    listed, why = anyio.run(ClaudeProvider(config_dir=cfg, env=env).list_agents)
    assert listed == [] and not prefetch._pending, (listed, why, prefetch._pending)
    assert runs.read_text().splitlines() == ["run"]  # one listing: the prefetched one
