"""`relay completion bash|zsh|fish` (issue 39): a script generated from relay's own parser by shtab,
tried in a real bash: `relay se<Tab>` completes to `send`, `relay send --w<Tab>` offers `--want` and
`--wait`, a TARGET completes from the specs the ledger recorded (no discovery), `relay run` from the
recipe shelves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import re

from relay_repl.frontends.cli import COMMANDS, build_parser
from relay_repl.frontends.commands.completion import NOT_TYPED, typed_parser, walk
from relay_repl.store.ledger import Ledger

TRY = r'''
source "$1"
try() {
  COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}
  read -ra COMP_WORDS <<< "$2"; [[ "$2" == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
  _shtab_relay
  printf '%s\n' "${COMPREPLY[@]}"
}
try "$@"
'''


def relay(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], capture_output=True, text=True, env=env,
                          timeout=60)


@pytest.fixture
def env(relay_home, tmp_path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"  # `relay` on PATH, as the installed script expects: this interpreter's
    bin_dir.mkdir()
    (bin_dir / "relay").write_text(f"#!/bin/sh\nexec {sys.executable} -m relay_repl \"$@\"\n")
    (bin_dir / "relay").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path), "RELAY_HOME": str(relay_home),
            "LANG": "C.UTF-8"}


def complete(script: Path, line: str, env: dict[str, str]) -> list[str]:
    out = subprocess.run(["bash", "-c", TRY, "try", str(script), line], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return [w for w in out.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_subcommands_flags_targets_and_recipes(env, relay_home, tmp_path):
    made = relay("completion", "bash", env=env)
    assert made.returncode == 0, made.stderr
    script = tmp_path / "relay.bash"
    script.write_text(made.stdout)
    assert complete(script, "relay se", env) == ["send"]
    assert complete(script, "relay send --w", env) == ["--want", "--wait"]
    assert "--json" in complete(script, "relay doctor --", env)
    assert complete(script, "relay send ", env) == []  # nothing sent yet: no target to offer, nothing discovered
    assert not relay_home.exists()  # a Tab creates nothing
    relay_home.mkdir()
    led = Ledger(relay_home / "ledger.sqlite")
    for spec in ("codex:beta", "claude:alpha", "codex:beta"):
        led.event("delivery", delivery="k", data={"spec": spec, "body": "hi"})
    led.close()
    assert complete(script, "relay send ", env) == ["codex:beta", "claude:alpha"]
    assert complete(script, "relay send cl", env) == ["claude:alpha"]
    assert complete(script, "relay verify ID --in co", env) == ["codex:beta"]
    assert "keep-answer" in complete(script, "relay run ", env) and complete(script, "relay run pi", env) == ["ping"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_subcommand_and_every_flag_is_in_the_script(shell, env):
    made = relay("completion", shell, env=env)
    assert made.returncode == 0, made.stderr
    names = [m.__name__.rpartition(".")[2] for m in COMMANDS if m.__name__.rpartition(".")[2] not in NOT_TYPED]
    assert "halts" in names and "completion" in names
    assert [n for n in names if not re.search(rf"(?<![\w-]){n}(?![\w-])", made.stdout)] == []
    flags = {o for a in walk(typed_parser(build_parser)) for o in a.option_strings if o.startswith("--") and o != "--words"}
    missing = sorted(f for f in flags if f not in made.stdout and f.lstrip("-") not in made.stdout)
    assert missing == []


def test_no_shell_is_one_line_and_exit_2(env):
    r = relay("completion", env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "relay completion bash" in r.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish")
def test_fish_completes_the_same(env, tmp_path):
    made = relay("completion", "fish", env=env)
    script = tmp_path / "relay.fish"
    script.write_text(made.stdout)

    def words(line: str) -> list[str]:
        out = subprocess.run(["fish", "--no-config", "-c", f"source {script}; complete -C '{line}'"], capture_output=True,
                             text=True, env=env, timeout=60)
        return sorted(ln.split("\t")[0] for ln in out.stdout.splitlines() if ln)

    assert words("relay se") == ["send"]
    assert words("relay send --w") == ["--wait", "--want"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh")
def test_the_zsh_script_parses(env, tmp_path):
    made = relay("completion", "zsh", env=env)
    (tmp_path / "_relay").write_text(made.stdout)
    check = subprocess.run(["zsh", "-n", str(tmp_path / "_relay")], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    assert made.stdout.startswith("#compdef relay")


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_a_target_name_is_never_expanded_by_the_shell_at_tab(env, relay_home, tmp_path):
    """bash's `compgen -W` expands every word of its list: a target whose name (its registry record's,
    or a remote host's listing) was `$(touch FILE)`, sent to once (a plan answered No records it too),
    ran that command at the next `relay send <Tab>` (old code: FILE is made). Such words are not
    offered; the ordinary ones still are."""
    made = relay("completion", "bash", env=env)
    script = tmp_path / "relay.bash"
    script.write_text(made.stdout)
    pwned = tmp_path / "pwned"
    relay_home.mkdir()
    led = Ledger(relay_home / "ledger.sqlite")
    for spec in (f"claude:$(touch${{IFS}}{pwned})", f"claude:`touch {pwned}`", "claude:$((1+1))", "claude:{a,b}",
                 "claude:alpha"):
        led.event("delivery", delivery="k", data={"spec": spec, "body": "hi"})
    led.close()
    assert complete(script, "relay send cl", env) == ["claude:alpha"]
    assert not pwned.exists()
    assert relay("completion", "--words", "targets", env=env).stdout.split() == ["claude:alpha"]
