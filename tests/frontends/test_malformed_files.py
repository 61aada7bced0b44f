"""Every command that reads hosts.toml, a recipe or a notebook's outputs, against a corpus of
malformed files (tests/support/malformed.py): exit 2, one line on stderr naming the file, no
traceback, and the stdout of a --json command empty or JSON (issue 32).

The whole matrix runs in-process through `cli.main` (an exception that is not relay's escapes it
and fails the test with its traceback, exactly what a real process would print); a sample of it
runs as real processes too, and a privilege-dropped child makes a file's mode real (we run as
root, whose reads a mode never stops)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from relay_repl.frontends import cli
from tests.support import malformed

HOSTS_COMMANDS = [
    ["hosts"], ["hosts", "--json"], ["hosts", "check"], ["hosts", "check", "--json"], ["hosts", "check", "build"],
    ["hosts", "add", "other", "me@other"], ["targets"], ["targets", "--json"], ["send", "build/claude:alpha", "hi"],
]


def _one_line(code: int, out: str, err: str, path: Path, argv: list[str]) -> None:
    assert code == 2, (argv, code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, (argv, err)
    assert lines[0].startswith(f"relay: {path}: "), (argv, err)
    assert "Traceback" not in err and "errors.pydantic.dev" not in err and "Input should" not in err, err
    if "--json" in argv:
        assert out.strip() == "" or json.loads(out) is not None, (argv, out)


def _main(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(argv)
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.parametrize("case", sorted(malformed.HOSTS))
def test_every_command_reading_hosts_toml_says_one_line_on_a_malformed_file(case, relay_home, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no client's listing is started by `targets`
    relay_home.mkdir()
    path = relay_home / "hosts.toml"
    malformed.HOSTS[case](path)
    before = _fingerprint(path)
    for argv in HOSTS_COMMANDS:
        code, out, err = _main(argv, capsys)
        _one_line(code, out, err, path, argv)
    assert _fingerprint(path) == before  # `hosts add` refused to write over a file it could not read: nothing lost


def _fingerprint(path: Path) -> tuple:
    st = os.lstat(path)
    return (st.st_mode, st.st_size, path.read_bytes() if path.is_file() and st.st_size < 1 << 20 else None)


@pytest.mark.parametrize("case", sorted(malformed.RECIPES))
def test_every_command_reading_a_recipe_says_one_line_on_a_malformed_file(case, relay_home, tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.chdir(tmp_path)  # ./recipes/ of the test, not of the checkout
    shelf = relay_home / "recipes"
    shelf.mkdir(parents=True)
    path = shelf / "t.toml"
    malformed.RECIPES[case](path)
    for argv in (["run", str(path), "--dry-run"], ["run", str(path), "--dry-run", "--json"],
                 ["--fake", "run", "t", "--dry-run"], ["run", "t", "--dry-run", "--json"]):
        code, out, err = _main(argv, capsys)
        _one_line(code, out, err, path, argv)
    # the listings go on past a broken file: it is listed with its one line, exit 0
    code, out, err = _main(["recipes"], capsys)
    assert code == 0 and "Traceback" not in out + err, err
    broken = [ln for ln in out.splitlines() if ln.startswith("t ")]
    assert len(broken) == 1 and f"BROKEN: {path}: " in broken[0], out
    code, out, err = _main(["recipes", "--json"], capsys)
    assert code == 0
    row = next(r for r in json.loads(out) if r["path"] == str(path))
    assert row["error"].startswith(f"{path}: ") and "\n" not in row["error"]


def _notebook(tmp_path: Path) -> tuple[Path, Path]:
    nb = tmp_path / "nb.py"
    nb.write_text("# %% hello\nx = 1\n", encoding="utf-8")
    run_dir = tmp_path / "nb.relay" / "20261204-000000-abcd"
    run_dir.mkdir(parents=True)
    (run_dir / "report.md").write_text("# report\n", encoding="utf-8")
    return nb, run_dir


@pytest.mark.parametrize("case", sorted(malformed.RUNS))
def test_every_command_reading_a_notebooks_outputs_says_one_line_on_a_malformed_file(case, tmp_path, capsys):
    pytest.importorskip("nbformat")
    nb, run_dir = _notebook(tmp_path)
    path = run_dir / "run.json"
    malformed.RUNS[case](path)
    for argv in (["notebook", "show", str(nb)], ["notebook", "show", str(nb), "--json"],
                 ["notebook", "show", str(nb), run_dir.name],
                 ["notebook", "export", str(nb), "--ipynb", str(tmp_path / "out.ipynb")]):
        code, out, err = _main(argv, capsys)
        _one_line(code, out, err, path, argv)
    assert not (tmp_path / "out.ipynb").exists()


@pytest.mark.parametrize("case", ["not-utf8", "nul", "huge", *malformed.UNREADABLE])
def test_a_malformed_report_or_notebook_file_is_one_line(case, tmp_path, capsys):
    nb, run_dir = _notebook(tmp_path)
    (run_dir / "run.json").write_text(malformed.RUN_GOOD, encoding="utf-8")
    report = run_dir / "report.md"
    report.unlink()
    maker = malformed.RECIPES[case]
    (malformed.RUNS["huge"] if case == "huge" else maker)(report)  # a run's outputs may be larger (RUN_MAX)
    code, out, err = _main(["notebook", "show", str(nb)], capsys)  # rendered from run.json: report.md unread
    assert code == 0 and "Traceback" not in out + err and out.startswith("# notebook "), (out, err)
    bad_nb = tmp_path / "bad.py"
    maker(bad_nb)
    code, out, err = _main(["notebook", "run", str(bad_nb), "--dry-run", "--json"], capsys)
    _one_line(code, out, err, bad_nb, ["notebook", "run", "--json"])


# -- as real processes ---------------------------------------------------------------------------

RELAY = [sys.executable, "-m", "relay_repl"]


@pytest.mark.parametrize("case", ["hosts-string", "hosts-list", "row-string", "not-utf8", "fifo"])
def test_as_a_real_process_no_traceback(case, relay_home):
    """Issue 32, the reproductions: `hosts` a string or a list, a host row a string, not UTF-8 (and a
    FIFO, which hung): `relay hosts`, `hosts --json`, `hosts check`, `targets --json` each ended in
    AttributeError or UnicodeDecodeError, exit 1; now one line, exit 2."""
    relay_home.mkdir()
    path = relay_home / "hosts.toml"
    malformed.HOSTS[case](path)
    for argv in (["hosts"], ["hosts", "--json"], ["hosts", "check"], ["targets", "--json"]):
        res = subprocess.run([*RELAY, *argv], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                             env={**os.environ, "PATH": "/usr/bin:/bin"})
        _one_line(res.returncode, res.stdout, res.stderr, path, argv)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_a_file_the_process_may_not_read_is_one_line(relay_home):
    """Mode 000 made real: we run as root, whose reads a mode never stops, so the command runs
    with the capabilities that bypass file modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) dropped
    from its bounding set (`setpriv`, util-linux): the kernel then refuses the read as it would an
    operator's unreadable file."""
    relay_home.mkdir()
    path = relay_home / "hosts.toml"
    path.write_text('[hosts.build]\ndestination = "me@b"\n')
    os.chmod(path, 0)
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]
    probe = subprocess.run([*drop, "cat", str(path)], capture_output=True, text=True)
    assert probe.returncode != 0, "the privilege drop did not take: the test would prove nothing"
    for argv in (["hosts"], ["hosts", "--json"], ["hosts", "add", "x", "me@x"], ["targets", "--json"]):
        res = subprocess.run([*drop, *RELAY, *argv], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, env={**os.environ, "PATH": "/usr/bin:/bin"})
        _one_line(res.returncode, res.stdout, res.stderr, path, argv)
        assert "permission denied" in res.stderr, res.stderr


def test_the_recipe_listing_never_prints_a_files_controls_raw(relay_home, tmp_path, capsys, monkeypatch):
    """A recipe shelf holds files anyone may edit (a peer's recipe, a name with an escape): their
    names, descriptions and errors are shown through the one neutraliser, never raw."""
    monkeypatch.chdir(tmp_path)
    shelf = relay_home / "recipes"
    shelf.mkdir(parents=True)
    (shelf / "ok.toml").write_text(malformed.RECIPE_GOOD.replace('name = "t"', 'name = "ok"\ndescription = '
                                                                 '"\\u001b[2Jcleared \u202eexe.txt"'))
    (shelf / "bad\x1b[31m.toml").write_text("steps = [")
    code, out, err = _main(["recipes"], capsys)
    assert code == 0 and "\x1b" not in out and "\u202e" not in out, out
    assert "\\x1b[2Jcleared ⟨U+202E⟩exe.txt" in out and "bad\\x1b[31m" in out and "BROKEN" in out
