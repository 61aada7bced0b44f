"""`relay notebook run|show` as a new user runs them: a real `relay` process, exit codes,
one line on stderr for every mistake before any cell runs, and no Jupyter kernel machinery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.trees import differences, snapshot

RELAY = [sys.executable, "-m", "relay_repl.frontends.cli"]
ROOT = Path(__file__).resolve().parents[2]

NB = '''# %% [markdown]
# # Demo

# %% tags=["parameters"]
target = "fake:inbox"
n = 2

# %% first
print("first cell ran", n)

# %% send
d = await session.send(target, f"hello {n}")
d.state.value
'''


def relay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RELAY, *args], capture_output=True, text=True, cwd=cwd, timeout=60,
                          stdin=subprocess.DEVNULL)


def nb(tmp_path: Path, text: str = NB) -> Path:
    p = tmp_path / "demo.py"
    p.write_text(text)
    return p


def test_bad_parameters_and_a_syntax_error_are_one_line_exit_2_before_any_cell(tmp_path):
    nb(tmp_path)
    for args, needle in ((["-p", "colour=red"], "no parameter colour"),
                         (["-p", "n=two"], "-p n='two': n is an int"),
                         (["-p", "target=fake:nobody"], "-p target=fake:nobody: no target fake:nobody")):
        r = relay("--fake", "notebook", "run", "demo.py", *args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.strip().splitlines() == [f"relay: demo.py: {needle}" + r.stderr.split(needle, 1)[1].rstrip()]
        assert "first cell ran" not in r.stdout and not (tmp_path / "demo.relay").exists()
    nb(tmp_path, NB.replace('print("first cell ran", n)', 'print("first cell ran", n'))
    r = relay("--fake", "notebook", "run", "demo.py", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith('relay: demo.py:9:6: syntax error in cell 3 "first"'), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


def test_a_run_without_a_terminal_is_declined_and_show_prints_the_report(tmp_path):
    nb(tmp_path, NB + '\n# %% boom\nraise RuntimeError("stop here")\n\n# %% after\nprint("never")\n')
    r = relay("--fake", "notebook", "run", "demo.py", "-p", "n=5", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "first cell ran 5" in r.stdout and "No terminal to ask on" in r.stdout and "never" not in r.stdout
    assert 'notebook demo, run ' in r.stdout and ', cell 5 "send"' in r.stdout  # the plan's heading
    show = relay("notebook", "show", "demo.py", cwd=tmp_path)
    assert show.returncode == 0
    report = show.stdout
    assert "- parameters: `n = 5`" in report and "- plan " in report and "**declined**" in report
    assert '## cell 6 "boom": error' in report and "RuntimeError: stop here" in report.split('"boom"')[1]
    assert '## cell 7 "after": not run' in report
    run = json.loads(relay("notebook", "show", "demo.py", "--json", cwd=tmp_path).stdout)
    assert run["state"] == "error" and run["cells"][4]["deliveries"][0]["state"] == "withheld"
    (run_dir,) = (tmp_path / "demo.relay").iterdir()
    assert (run_dir / "cells.jsonl").read_text().count("\n") == 5  # the code cells run (the prose cell is not a run)


def test_dry_run_exit_0_says_so_and_sends_nothing(tmp_path, relay_home):
    nb(tmp_path)
    r = relay("--fake", "notebook", "run", "demo.py", "--dry-run", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)
    assert run["dry_run"] and run["state"] == "done"
    assert "dry run: not sent" in r.stderr and "3 payload" in r.stderr
    assert "plan" not in relay("log", cwd=tmp_path).stdout


def test_dry_run_changes_no_file_outside_its_outputs_not_even_a_fresh_relay_home(tmp_path, relay_home):
    """Issue 18, 9: a dry run sends nothing, so it makes no RELAY_HOME and no ledger, and an
    existing ledger is only read; the one thing it writes is its run under `demo.relay/`."""
    nb(tmp_path)
    outputs = str(tmp_path / "demo.relay")
    allowed = lambda p: ("*",) if p.startswith(outputs) else ("mtime", "ctime") if p == str(tmp_path) else ()  # noqa: E731
    assert not relay_home.exists()
    before = snapshot([tmp_path])
    r = relay("--fake", "notebook", "run", "demo.py", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0 and "dry run: not sent" in r.stdout, r.stderr
    assert differences(before, snapshot([tmp_path]), allowed) == []
    assert relay("--fake", "notebook", "run", "demo.py", cwd=tmp_path).returncode == 0  # declined; makes the ledger
    assert (relay_home / "ledger.sqlite").exists()
    before = snapshot([tmp_path])
    r = relay("--fake", "notebook", "run", "demo.py", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0 and "dry run: not sent" in r.stdout, r.stderr
    assert differences(before, snapshot([tmp_path]), allowed) == []


def test_the_runner_loads_no_jupyter_kernel_machinery(tmp_path):
    nb(tmp_path, NB + '\n# %% modules\nimport sys\nprint("kernel modules:", sorted(m for m in sys.modules '
                      'if m.split(".")[0] in ("ipykernel", "jupyter_client", "zmq")))\n')
    r = relay("--fake", "notebook", "run", "demo.py", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "kernel modules: []" in r.stdout


def test_recipes_lists_notebooks_beside_the_toml_recipes_and_run_runs_either(tmp_path):
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "demo.py").write_text(NB)
    (tmp_path / "recipes" / "plain.py").write_text("print('not a notebook')\n")
    r = relay("recipes", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "demo           Demo [notebook, 3 cells]" in r.stdout and "-p n=<int> (default 2)" in r.stdout
    assert "triage " in r.stdout and "handoff " in r.stdout and "ping " in r.stdout and "plain" not in r.stdout
    listed = {x["name"]: x for x in json.loads(relay("recipes", "--json", cwd=tmp_path).stdout)}
    assert listed["demo"]["kind"] == "notebook" and listed["demo"]["params"] == {"target": "fake:inbox", "n": 2}
    assert listed["triage"]["params"]["follow_up"] == "claude:alpha" and listed["ping"]["kind"] == "recipe"
    run = relay("--fake", "run", "demo", "-p", "n=4", "--dry-run", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "first cell ran 4" in run.stdout and (tmp_path / "recipes" / "demo.relay").is_dir()


def test_export_ipynb_is_a_valid_nbformat_4_notebook_with_the_runs_outputs_and_no_kernel(tmp_path):
    import nbformat

    nb(tmp_path)
    assert relay("--fake", "notebook", "run", "demo.py", "--dry-run", cwd=tmp_path).returncode == 0
    r = relay("notebook", "export", "demo.py", "--ipynb", "out.ipynb", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    book = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    nbformat.validate(book)
    assert "kernelspec" not in book.metadata
    kinds = [c.cell_type for c in book.cells]
    assert kinds == ["markdown", "code", "code", "code"]
    first = book.cells[2]
    assert first.outputs[0].output_type == "stream" and first.outputs[0].text == "first cell ran 2\n"
    last = book.cells[3]
    assert last.outputs[-1].output_type == "execute_result" and last.outputs[-1].data["text/plain"] == "'withheld'"


def test_jupytext_reads_the_shipped_notebooks_as_the_cells_the_runner_runs():
    import jupytext

    from relay_repl.core.notebook_cells import parse_cells

    for name in ("triage", "handoff"):
        path = ROOT / "recipes" / f"{name}.py"
        theirs = [(c.cell_type, c.source, c.metadata.get("title", ""), c.metadata.get("tags", []))
                  for c in jupytext.read(path).cells]
        ours = [(c.kind, c.source, c.title, c.tags) for c in parse_cells(path.read_text(), str(path)).cells]
        assert theirs == ours and len(ours) >= 5
