"""What `relay ask TARGET BODY` and `relay serve --stdio` load before they answer (issue 33), and that
their answers are the full judge's where the kinds' cheap rules decide.

Both ask first whether this process runs inside an agent session: `relay ask` to name the asker (it is
refused when none is established), `relay serve --stdio` to refuse the operator's acts to an agent.
Where every kind's rule excludes the ancestry (session/core/outside.py), the answer is the judge's own
"no session" without the judge (agents/origin.py, which imports pydantic and every kind); where any
rule cannot exclude, the judge loads and decides, as before. The probe runs the console script's
`main` in a fresh interpreter, in an empty HOME, and prints the modules loaded when it is done."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.frontends.test_reply_cold import PROBE  # the console script's main, then the modules it loaded


NOT_BEFORE_THE_ANSWER = {
    "pydantic", "pydantic_core", "relay_repl.agents", "relay_repl.agents.origin", "relay_repl.core.envelope",
    "relay_repl.core.inbound", "relay_repl.core.target", "relay_repl.session.core.inbox", "uuid", "dataclasses",
}


def _run(tmp_path: Path, relay_home: Path, *words: str, stdin: str = "") -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = {"HOME": str(tmp_path), "RELAY_HOME": str(relay_home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CODEX_HOME": str(tmp_path / "codex"),
           "RELAY_CLAUDE_BIN": str(tmp_path / "no-claude")}
    cp = subprocess.run([sys.executable, "-c", PROBE, *words], cwd=tmp_path, env=env, input=stdin, capture_output=True,
                        text=True, timeout=60)
    line = next((ln for ln in cp.stderr.splitlines() if ln.startswith("MODULES ")), "MODULES []")
    return cp, set(ast.literal_eval(line.removeprefix("MODULES ")))


def _refusal(cp: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in cp.stderr.splitlines() if not ln.startswith("MODULES ")]
    assert cp.returncode == 1 and cp.stdout == "" and len(lines) == 1, cp
    return lines[0]


def test_an_ask_from_a_shell_no_agent_started_is_refused_without_the_judge(tmp_path, relay_home):
    cp, loaded = _run(tmp_path, relay_home, "ask", "codex:beta", "please review src/x.py")
    line = _refusal(cp)
    assert line.startswith("relay: not held: relay cannot establish which session is asking (pid "), line
    assert line.endswith(" is no discovered session and was not started by one)"), line
    assert "relay_repl.session.core.asking" in loaded and "relay_repl.session.core.outside" in loaded  # the probe saw the ask
    assert NOT_BEFORE_THE_ANSWER & loaded == set() and "sqlite3" not in loaded  # nor the ledger: nothing to write
    assert not (relay_home / "ledger.sqlite3").exists()  # nothing written anywhere


def test_where_a_rule_cannot_exclude_the_judge_decides_in_the_same_words(tmp_path, relay_home):
    sessions = tmp_path / "claude" / "sessions"
    sessions.mkdir(parents=True)
    # a stale record for this test process (the probe's ancestor): Claude's rule defers, the judge reads it
    (sessions / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(), "procStart": "1"}))
    cp, loaded = _run(tmp_path, relay_home, "ask", "codex:beta", "please review src/x.py")
    line = _refusal(cp)
    assert line.startswith("relay: not held: relay cannot establish which session is asking (pid "), line
    assert line.endswith(" is no discovered session and was not started by one)"), line
    assert "relay_repl.agents.origin" in loaded and "pydantic" in loaded


def test_an_asks_usage_and_options_are_still_the_clis(tmp_path, relay_home):
    cp, _ = _run(tmp_path, relay_home, "ask", "codex:beta")
    assert cp.returncode == 2 and "relay ask TARGET BODY: name the session and the line to send" in cp.stderr
    cp, _ = _run(tmp_path, relay_home, "ask", "--want", "maybe", "codex:beta", "hi")
    assert cp.returncode == 2 and "invalid choice: 'maybe'" in cp.stderr  # argparse's own words
    cp, loaded = _run(tmp_path, relay_home, "ask", "--json", "codex:beta", "hi")
    assert "is no discovered session" in _refusal(cp) and "argparse" in loaded


def test_serve_answers_its_first_hello_without_the_judge_or_a_model(tmp_path, relay_home):
    hello = json.dumps({"v": 1, "id": 1, "op": "hello", "args": {"protocol": 1}}) + "\n"
    cp, loaded = _run(tmp_path, relay_home, "serve", "--stdio", stdin=hello)
    assert cp.returncode == 0, cp.stderr
    answer = json.loads(cp.stdout.splitlines()[0])
    assert answer["ok"] is True and answer["id"] == 1 and answer["result"]["protocol"] == 1
    assert "relay_repl.session.remote.serve" in loaded and "relay_repl.session.core.outside" in loaded
    assert {"pydantic", "pydantic_core", "relay_repl.agents", "relay_repl.agents.origin"} & loaded == set()
