"""`relay ask` from an agent's shell whose kind's standard-library rule names the session it claims
(Codex's `$CODEX_THREAD_ID`): the claim goes to the operator's inbox without the origin judge on the
asking side, and the inbox judges it as it judges every request (issue 33).

The operator's side is `tests/session/test_requests.py`'s desk (a real inbox and session, the test's
agent module as the judge's only kind); the asker is the console script's `main` in a fresh
interpreter, started by a stand-in agent process the judge knows. The kinds' cheap rules cannot
exclude that ancestry here (a registry record names this test process), so only the claim decides
what the asking side does."""

from __future__ import annotations

import ast
import json
import os
import sys
import textwrap

import pytest

from tests.session.test_requests import desk

pytestmark = pytest.mark.anyio

THREAD = "019a1b2c-3d4e-7f00-8a9b-0c1d2e3f4a5b"
PROBE = textwrap.dedent("""
    import sys
    sys.argv = ["relay", *sys.argv[1:]]
    from relay_repl.frontends.entry import main
    code = main()
    print("RESULT", code, sorted(sys.modules), flush=True)
""")


@pytest.fixture
def thread_env(tmp_path, monkeypatch):
    """A Codex tool command's environment, and a Claude record for this test process (an ancestor of
    every asker): Claude's cheap rule cannot exclude it, so the asking side does not refuse at once."""
    cfg = tmp_path / "claude"
    (cfg / "sessions").mkdir(parents=True)
    (cfg / "sessions" / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(), "procStart": "1"}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CODEX_THREAD_ID", THREAD)
    for name in ("CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_PID"):
        monkeypatch.delenv(name, raising=False)


def claimable_thread(d, also: frozenset[str]) -> None:
    """The judge's kind says the stand-in agent may also claim `also` (as a Codex thread's host may
    claim the thread's id)."""
    plain = d.agents.identify_process

    def identify(pid, below=()):
        ident = plain(pid, below)
        return None if ident is None else ident.model_copy(update={"claimable": ident.claimable | also})

    d.agents.identify_process = identify


def result(out: str) -> tuple[int, set[str]]:
    line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
    code, _, mods = line.removeprefix("RESULT ").partition(" ")
    return int(code), set(ast.literal_eval(mods))


async def test_a_threads_claim_is_held_once_the_inbox_judged_it(relay_home, thread_env):
    async with desk(relay_home, []) as d:
        claimable_thread(d, frozenset({THREAD}))
        out = await d.run_as("fake:beta", sys.executable, "-c", PROBE, "ask", "fake:alpha",
                             "what does src/x.py do?")
        code, loaded = result(out)
        assert code == 0, out
        [req] = list(d.s.requests)
        assert req.id.startswith(f"{THREAD}-") and f"held for the operator's approval (request {req.id})" in out
        assert req.asker == "fake:beta" and req.verdict == "verified" and req.body == "what does src/x.py do?"
        assert d.mem.received == [], "held, nothing sent"
        assert {"pydantic", "relay_repl.agents", "relay_repl.agents.origin", "relay_repl.core.envelope",
                "relay_repl.core.inbound", "relay_repl.session.core.inbox"} & loaded == set()


async def test_a_claim_that_is_not_the_sessions_is_refused_by_the_inbox(relay_home, thread_env):
    async with desk(relay_home, []) as d:  # the stand-in agent may claim "beta" only, not the thread's id
        out = await d.run_as("fake:beta", sys.executable, "-c", PROBE, "ask", "fake:alpha", "hello")
        code, loaded = result(out)
        assert code == 1 and "relay_repl.agents.origin" not in loaded
        assert list(d.s.requests) == [] and d.mem.received == []
        assert any("refused: the asking session is not established" in line and "mismatch" in line for line in d.lines)


async def test_the_mcp_tools_ask_claims_nothing_from_its_environment(relay_home, thread_env):
    """The MCP server (relay_send) is started once by a host for all its sessions: its environment names
    no one session, so its ask is established by the judge (here: none, refused before the inbox)."""
    async with desk(relay_home, []) as d:
        claimable_thread(d, frozenset({THREAD}))
        out = await d.run_as("fake:beta", sys.executable, "-c", textwrap.dedent("""
            from relay_repl.session.core.asking import ask
            try:
                ask("fake:alpha", "hello")
            except Exception as exc:
                print("REFUSED", exc)
        """))
        assert "REFUSED not held: relay cannot establish which session is asking (pid " in out, out
        assert list(d.s.requests) == [] and not any("request" in line for line in d.lines)
