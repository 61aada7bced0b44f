"""What `relay reply ID TEXT` imports, and that its light path answers and refuses as the model's did
(issue 33: each answer a Codex agent gives this way is one process start; 0.22-0.39 CPU-s of it
was importing pydantic, the agents package and the CLI's parser).

The probe runs the console script's `main` in a fresh interpreter, as a Codex tool call would
(`CODEX_THREAD_ID` set), against a real inbox listening in another process, and prints the modules
loaded when it is done: no pydantic, no agents package, no envelope or inbox model, no argparse."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from relay_repl.core.envelope import HOP_CAP, Envelope
from relay_repl.store.ledger import Ledger

INBOX = textwrap.dedent("""
    import sys, anyio
    from relay_repl.session.core.inbox import Inbox
    from relay_repl.store.ledger import Ledger

    async def main():
        led = Ledger.default()
        ids = []
        for hop in (0, int(sys.argv[1])):
            rid = led.next_id("operator.test.1")
            led.record_sent(rid, hop, "codex:beta")
            ids.append(rid)
        async with anyio.create_task_group() as tg:
            await Inbox(led, "operator.test.1", "operator:relay@operator.test.1").listen(tg)
            print("ready", *ids, flush=True)
            await anyio.sleep(3600)
    anyio.run(main)
""")

PROBE = """
import sys
from relay_repl.frontends.entry import main
code = main()
print("MODULES", sorted(sys.modules), file=sys.stderr, flush=True)
sys.exit(code)
"""

NOT_FOR_A_REPLY = {
    "pydantic", "pydantic_core", "relay_repl.agents", "relay_repl.core.envelope", "relay_repl.core.target",
    "relay_repl.core.inbound", "relay_repl.core.plan", "relay_repl.session.core.inbox", "relay_repl.store.ledger_values",
    "relay_repl.frontends.cli", "argparse", "dataclasses", "uuid", "asyncio", "anyio", "subprocess",
}
THREAD = "019a1b2c-3d4e-7f00-8a9b-0c1d2e3f4a5b"


@pytest.fixture
def inbox(relay_home, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", INBOX, str(HOP_CAP)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, RELAY_HOME=str(relay_home)))
    try:
        word, *ids = proc.stdout.readline().split()
        assert word == "ready", ids
        yield ids
    finally:
        proc.kill()
        proc.wait()


def _reply(relay_home: Path, tmp_path: Path, *words: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = {"HOME": str(tmp_path), "RELAY_HOME": str(relay_home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "CODEX_THREAD_ID": THREAD, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "RELAY_TMUX_SOCKET": f"relay-test-none-{uuid.uuid4().hex[:8]}"}
    cp = subprocess.run([sys.executable, "-c", PROBE, "reply", *words], cwd=tmp_path, env=env, capture_output=True,
                        text=True, timeout=60)
    line = next((ln for ln in cp.stderr.splitlines() if ln.startswith("MODULES ")), "MODULES []")  # none: argparse exited
    return cp, set(ast.literal_eval(line.removeprefix("MODULES ")))


def _arrived(relay_home: Path, answers: str, timeout: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout
    led = Ledger(relay_home / "ledger.sqlite3") if (relay_home / "ledger.sqlite3").exists() else Ledger.default()
    try:
        while time.monotonic() < deadline:
            got = [m.line for m in led.inbox(answers=answers)]
            if got:
                return got
            time.sleep(0.05)
        return []
    finally:
        led.close()


def test_a_reply_imports_no_model_agent_or_parser_and_its_line_is_the_envelopes(relay_home, tmp_path, inbox):
    first, _at_cap = inbox
    cp, loaded = _reply(relay_home, tmp_path, first, "tests pass on main", "— 412 passed")
    assert cp.returncode == 0, cp.stderr
    said = json.dumps(cp.stdout)
    assert cp.stdout.startswith(f"replied to {first} as {THREAD}-1 (hop 1) into "), said
    assert "relay_repl.session.core.reply" in loaded  # the probe saw the reply's own imports
    assert NOT_FOR_A_REPLY & loaded == set()
    want = Envelope.make(sender=f"agent:codex@{THREAD}", to="operator", id=f"{THREAD}-1", hop=1, want="none",
                         re=first, body="tests pass on main — 412 passed").compose()
    assert _arrived(relay_home, first) == [want]


def test_the_refusals_are_the_models(relay_home, tmp_path, inbox):
    first, at_cap = inbox
    cp, _ = _reply(relay_home, tmp_path, "operator.test.1-99", "hi")
    assert cp.returncode == 1 and "relay: relay id 'operator.test.1-99' was not sent by the operator here" in cp.stderr
    cp, loaded = _reply(relay_home, tmp_path, first, "a\tb")
    assert cp.returncode == 1 and "the message holds the control character U+0009 HT (tab) at position 2" in cp.stderr
    assert "relay_repl.core.envelope" in loaded  # the model said it
    cp, _ = _reply(relay_home, tmp_path, at_cap, "one too many")  # the tab's refusal took id -1, as before
    assert cp.returncode == 1, cp.stderr
    assert f"relay: relay id {THREAD}-2 is at hop {HOP_CAP}, the cap is {HOP_CAP}: not replying or forwarding" in cp.stderr
    cp, _ = _reply(relay_home, tmp_path, first)
    assert cp.returncode == 2 and "the following arguments are required: text" in cp.stderr  # the CLI's parser
    assert _arrived(relay_home, first, timeout=0.5) == [] and _arrived(relay_home, at_cap, timeout=0.1) == []


def test_a_halt_in_force_stops_a_reply(relay_home, tmp_path, inbox):
    first, _ = inbox
    led = Ledger.default()
    led.halt("relay-halt received in a test", by="test")
    led.close()
    cp, _ = _reply(relay_home, tmp_path, first, "answer")
    assert cp.returncode != 0 and "relay-halt is in force (relay-halt received in a test): not replying" in cp.stderr
