"""`relay targets` and `relay notebook run` start the Claude listing (`claude agents --json`, a node
process of its own) before their heavy imports, so the two overlap. That only works if importing
the prefetch module imports nothing heavy: when it lived in `relay_repl.agents`, importing it ran
the agents package first (pydantic and every agent module, ~0.2 s), and the listing started only
after them; `relay notebook run` then waited on it before its first cell (issue 18's start goal)."""

from __future__ import annotations

import os
import signal

import pytest

from tests.support.probes import run_cold_probe, undecided_record

# A spawn is seen by its audit event (subprocess.Popen or os.posix_spawn: argv second), which
# needs no import of what spawns it.
PROBE = """
import sys
seen = []
def probe(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn") and list(args[1])[1:] == ["agents", "--json"]:
        # the listing starts: what is imported by now?
        seen.append(sorted(m for m in ("pydantic", "relay_repl.agents", "relay_repl.session") if m in sys.modules))
sys.addaudithook(probe)
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
import sys
seen = []
def probe(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn") and list(args[1])[1:] == ["agents", "--json"]:
        seen.append(sorted(m for m in ("argparse", "relay_repl.frontends.cli", "pydantic") if m in sys.modules))
        print("LISTING STARTED WITH", seen, file=sys.stderr, flush=True)  # relay targets leaves by os._exit
        print("STDLIB BEFORE SPAWN", sorted(m for m in ("subprocess", "dataclasses", "inspect", "typing", "shutil",
              "selectors", "threading") if m in sys.modules), file=sys.stderr, flush=True)
sys.addaudithook(probe)
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


def test_nothing_but_the_spawn_is_imported_before_the_spawn(tmp_path, relay_home):
    """Before `claude agents --json` is spawned, `relay targets` imports none of the standard
    library's heavier modules: subprocess (selectors, threading), dataclasses (inspect, ast, dis),
    typing, shutil (zlib, bz2, lzma). Each was in front of the spawn, ~35 ms together at load 2,
    every millisecond of it added to the cold ratio to the listing itself (issue 20 item 4)."""
    r = run_cold_probe(tmp_path, relay_home, ENTRY_PROBE)
    assert "STDLIB BEFORE SPAWN []" in r.stderr, r.stderr[-2000:]


def test_no_listing_is_started_where_claudes_rule_decides(tmp_path, relay_home):
    """Discovery applies Claude's listing rule to the registry itself (listing_rule.py): when it
    decides every record, `relay targets` spawns no `claude agents --json` at all (a node process,
    ~0.17 CPU-s, competing with relay's own start on two cores); where it does not, the listing is
    started early, as above. The old prefetch started it whatever the registry held."""
    r = run_cold_probe(tmp_path, relay_home, ENTRY_PROBE, listing_needed=False)
    assert "LISTING STARTED" not in r.stderr, r.stderr[-2000:]
    assert r.stdout.lstrip().startswith("["), (r.stdout, r.stderr[-2000:])


def test_wanted_for_a_hosts_relay_serving_stdio_and_not_for_help():
    """`relay serve --stdio` is opened for a first `targets` or `send`, both of which discover:
    its listing overlaps the serve process's imports (the cold channel of issue 21)."""
    from relay_repl.system.prefetch import wanted

    assert wanted(["serve", "--stdio"]) and wanted(["--fake", "serve", "--stdio"])
    assert not wanted(["serve", "--stdio", "--help"]) and not wanted(["serve"])


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
    undecided_record(cfg / "sessions")
    env = {"HOME": str(tmp_path), "PATH": f"{bin_dir}:/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(cfg)}
    prefetch.start(env)
    assert [slot[0] for slot in prefetch._pending] == ["claude-code"], prefetch._pending
    listed, why = anyio.run(ClaudeProvider(config_dir=cfg, env=env).list_agents)
    assert listed == [] and not prefetch._pending, (listed, why, prefetch._pending)
    assert runs.read_text().splitlines() == ["run"]  # one listing: the prefetched one


def test_a_prefetched_listing_is_set_up_and_read_as_popen_would_do_it(tmp_path):
    """The early listing is `os.posix_spawn`ed (importing subprocess was in front of the spawn):
    its exit code and both outputs come back as `subprocess.run` gives them; an inheritable
    descriptor of ours is closed in it (close_fds) and SIGPIPE is back to its default (Python
    ignores it; a listing piped into a closed reader must die of it, as under Popen)."""
    from relay_repl.system.prefetch import Listing

    with open(tmp_path / "held", "w") as held:
        os.set_inheritable(held.fileno(), True)
        fd = held.fileno()
        script = (f"test -e /proc/self/fd/{fd} && echo fd-open || echo fd-closed; "
                  "grep SigIgn /proc/self/status; echo err >&2; exit 3")
        code, out, err = Listing(["/bin/sh", "-c", script], dict(os.environ)).result(timeout=10)
    assert code == 3 and err == b"err\n", (code, out, err)
    lines = out.decode().splitlines()
    assert lines[0] == "fd-closed", lines
    ignored = int(lines[1].split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1)), lines


def test_a_prefetched_listing_that_overstays_is_killed_at_its_timeout(tmp_path):
    from relay_repl.system.prefetch import Listing

    slow = Listing(["/bin/sleep", "30"], dict(os.environ))
    with pytest.raises(TimeoutError):
        slow.result(timeout=0.2)
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(slow.pid, 0)
