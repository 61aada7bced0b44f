"""`relay notebook show` (and `--json`) on run files edited or cut short (issue 38): one line
naming the file, never a traceback; what it prints holds no raw control, C1 or bidi character.
On e6902ec a hand-edited run.json ended in a traceback and escape codes were printed raw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NB = '''# %% hello
print("hi")
'''
RAW = ("\x1b", "\x9b", "\u202e", "\x07")


def relay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relay_repl.frontends.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ), stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """One real `relay --fake notebook run` for the module (its own RELAY_HOME): the notebook's folder."""
    work = tmp_path_factory.mktemp("nb-work")
    (work / "nb.py").write_text(NB)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RELAY_HOME", str(tmp_path_factory.mktemp("nb-home")))
        res = relay("--fake", "notebook", "run", "nb.py", cwd=work)
    assert res.returncode == 0, res.stderr
    return work


@pytest.fixture
def run_dir(pristine, tmp_path, relay_home) -> Path:
    """A copy of the module's run for this test to edit (`notebook show` reads the run folder only)."""
    shutil.copytree(pristine, tmp_path / "w")
    (d,) = (tmp_path / "w" / "nb.relay").iterdir()
    return d


def test_escapes_in_an_edited_run_file_are_shown_inert(run_dir):
    data = json.loads((run_dir / "run.json").read_text())
    data["cells"][0]["stdout"] = "fine\x1b[2J\x1b]0;owned\x07 \x9b31m red \u202eevil\n"
    data["cells"][0]["title"] = "t\x1b[31m"
    data["cells"][0]["source"] = "print('\x1b[2J')"
    data["reason"] = "\x1b[1A\x1b[2Kdelivered (verified)"
    (run_dir / "run.json").write_text(json.dumps(data, ensure_ascii=False))
    (run_dir / "report.md").write_text("raw \x1b[2J report\n")
    for args in (["notebook", "show", "nb.py"], ["notebook", "show", "nb.py", "--json"]):
        res = relay(*args, cwd=run_dir.parent.parent)
        assert res.returncode == 0, res.stderr
        assert not any(c in res.stdout for c in RAW), (args, res.stdout)
    res = relay("notebook", "show", "nb.py", "--json", cwd=run_dir.parent.parent)
    assert json.loads(res.stdout)["cells"][0]["stdout"].startswith("fine\x1b[2J")  # the exact text, escaped
    res = relay("notebook", "show", "nb.py", cwd=run_dir.parent.parent)
    assert "\\x1b[2J" in res.stdout and "⟨U+202E⟩" in res.stdout


@pytest.mark.parametrize("how", ["truncated", "wrong-shape", "not-utf8", "not-json", "escape-in-a-bad-field",
                                 "no-report"])
def test_an_edited_or_truncated_run_file_is_one_line(run_dir, how):
    f = run_dir / "run.json"
    text = f.read_text()
    if how == "truncated":
        f.write_text(text[: len(text) // 2])
    elif how == "wrong-shape":
        data = json.loads(text)
        data["cells"] = [{"index": "first\x1b[2J"}]
        f.write_text(json.dumps(data))
    elif how == "not-utf8":
        f.write_bytes(b"\xff\xfe" + text.encode()[:100])
    elif how == "not-json":
        f.write_text("\x1b[2J" + "[" * 100_000)
    elif how == "escape-in-a-bad-field":
        data = json.loads(text)
        data["state"] = {"\x1b[2J": 1}
        f.write_text(json.dumps(data))
    else:
        (run_dir / "report.md").unlink()
    for args in (["notebook", "show", "nb.py"], ["notebook", "show", "nb.py", "--json"]):
        res = relay(*args, cwd=run_dir.parent.parent)
        out = res.stdout + res.stderr
        assert "Traceback" not in out and "pydantic" not in out, out
        assert not any(c in out for c in RAW), out
        if how == "no-report":
            assert res.returncode == 0 and "## cell 1" in res.stdout or args[-1] == "--json", res
            continue
        assert res.returncode != 0 and res.stdout == ""
        (line,) = res.stderr.strip().splitlines()
        assert line.startswith("relay: ") and "run.json" in line and "edited or cut short" in line, line


@pytest.mark.parametrize("name", ["loop.py", "N" * 300])
def test_a_notebook_path_the_file_system_refuses_is_one_line(tmp_path, relay_home, name):
    """A link that points at itself, or a name longer than the file system takes: `relay notebook
    show` ended in a traceback (RuntimeError: Symlink loop; OSError: File name too long)."""
    (tmp_path / "loop.py").symlink_to("loop.py")
    res = relay("notebook", "show", name, cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-600:]
    assert res.stderr.startswith("relay: ") and res.stderr.count("\n") == 1 and len(res.stderr) < 400, res.stderr
