"""The live half's spread over two xdist workers (tests/support/live_schedule.py): modules sharing a
lab are one unit on one worker, and costly units go first. Checked on a real two-worker pytest run of
a stand-in tree with the same module paths, whose labs are fixtures counting their start-ups."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.live_schedule import COST, LAB_GROUPS, order_items, unit_of

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = '''
import pytest
from tests.support.notes import note

pytest_plugins = ["tests.support.live_schedule"]


@pytest.fixture(scope="session")
def lab_home_2x2():
    note(setup="lab-2x2")
    yield
'''

LAB_CONFTEST = '''
import pytest
from tests.support.notes import note


@pytest.fixture(scope="package")
def hosts_lab_home():
    note(setup="hosts-lab")
    yield
'''

NOTES = '''
import json, os


def note(**kw):
    with open(os.environ["SCHED_LOG"], "a") as fh:
        fh.write(json.dumps({"w": os.environ.get("PYTEST_XDIST_WORKER", "-"), **kw}) + "\\n")
'''


def _module(fixture: str | None, tests: int, seconds: float) -> str:
    arg = fixture or ""
    return "".join(f'''
def test_{i}({arg}):
    import time
    from tests.support.notes import note
    note(test=__name__)
    time.sleep({seconds})
''' for i in range(tests))


def test_units_share_one_lab_start_and_the_costliest_go_first(tmp_path):
    tree = tmp_path / "tree"
    files = {"tests/__init__.py": "", "tests/conftest.py": CONFTEST, "tests/lab/__init__.py": "",
             "tests/lab/conftest.py": LAB_CONFTEST, "tests/agents/__init__.py": "", "tests/session/__init__.py": "",
             "tests/frontends/__init__.py": "", "tests/support/__init__.py": "",
             "tests/support/notes.py": NOTES,
             "tests/support/live_schedule.py": (ROOT / "tests/support/live_schedule.py").read_text()}
    for module in LAB_GROUPS["lab-2x2"]:
        files[module] = _module("lab_home_2x2", 2, 0.01)
    for module in LAB_GROUPS["hosts-lab"]:
        files[module] = _module("hosts_lab_home", 2, 0.01)
    # modules of another package (and plain ones) collected between the host modules: under plain
    # loadfile a worker would leave tests/lab between them and the package lab would start again
    files["tests/lab/test_a_plain_live.py"] = _module(None, 1, 0.01)
    files["tests/frontends/test_dead_live.py"] = _module(None, 1, 0.01)
    for n in range(8):
        files[f"tests/frontends/test_small_{n}_live.py"] = _module(None, 1, 0.01)
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    log = tmp_path / "log.jsonl"
    env = {**os.environ, "SCHED_LOG": str(log), "PYTHONPATH": str(tree)}
    for var in [v for v in env if v.startswith("PYTEST_")]:
        env.pop(var)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # xdist only (-p below): three processes, ~1 CPU-s less each
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist.plugin",
                          "-n", "2", "--dist", "loadfile", "tests"], cwd=tree, env=env, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    module_of = {n["test"]: n["test"].replace(".", "/") + ".py" for n in notes if "test" in n}
    assert len({n["w"] for n in notes if "test" in n}) == 2, "both workers ran tests"
    starts = [n for n in notes if "setup" in n]
    assert sorted(n["setup"] for n in starts) == ["hosts-lab", "lab-2x2"], f"each lab started once: {starts}"
    workers_of = {g: {n["w"] for n in notes if module_of.get(n.get("test", "")) in mods} for g, mods in LAB_GROUPS.items()}
    assert all(len(ws) == 1 for ws in workers_of.values()), workers_of
    first: dict[str, str] = {}
    for n in notes:
        if "test" in n:
            first.setdefault(n["w"], unit_of(module_of[n["test"]]))
    # the two costliest units start the run, one on each worker
    assert sorted(first.values()) == ["lab-group:hosts-lab", "lab-group:lab-2x2"], first


def test_the_groups_name_every_module_that_uses_their_lab():
    uses = {"lab-2x2": "lab_home_2x2", "hosts-lab": "test_hosts_live import lab2"}
    for group, needle in uses.items():
        users = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*_live.py") if needle in p.read_text()}
        if group == "hosts-lab":
            users.add("tests/lab/test_hosts_live.py")
        assert users == set(LAB_GROUPS[group]), (group, users ^ set(LAB_GROUPS[group]))
    named = {m for mods in LAB_GROUPS.values() for m in mods} | set(COST)
    assert all((ROOT / m).is_file() for m in named), [m for m in named if not (ROOT / m).is_file()]


def test_order_keeps_modules_contiguous_and_puts_the_costliest_unit_first():
    ids = ["tests/lab/test_hosts_live.py::a", "tests/x/test_one.py::a", "tests/lab/test_requests_hosts_live.py::a",
           "tests/x/test_one.py::b", "tests/frontends/test_dead_live.py::a", "tests/lab/test_hosts_session_live.py::a"]
    order = [ids[i] for i in order_items(ids)]
    assert order[:3] == ["tests/lab/test_hosts_live.py::a", "tests/lab/test_requests_hosts_live.py::a",
                         "tests/lab/test_hosts_session_live.py::a"]
    assert order[3] == "tests/frontends/test_dead_live.py::a"
    assert order[4:] == ["tests/x/test_one.py::a", "tests/x/test_one.py::b"]
    assert unit_of(order[0]) == unit_of(order[2]) != unit_of(order[3])
