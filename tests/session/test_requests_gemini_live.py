"""Live: a Gemini CLI agent asks too (issue 31's Done-when, "and from Gemini"), in a lab of its own
(Claude alpha, Codex beta, Gemini gamma), answered in a real terminal (tmux).

gemini:gamma, prompted in its pane, calls relay_send on the relay MCP server its settings name
(`mcp_relay_relay_send`); the REPL shows the request; `approve_request` shows the plan, y then Enter
sends it to claude:alpha; alpha's answer is verified and, after a second y, reaches gamma (typed into its
pane: its own chat file then holds `re=<request id>`); gamma's relay_request_status reads
held -> approved -> delivered.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.session.test_requests_live import ask_approve_answer, claude_files_hold

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.fixture(scope="module")
def lab_home(tmp_path_factory):
    from relay_repl.testing.labs import private_lab_home

    with private_lab_home(tmp_path_factory, "gemini-lab") as home:
        yield home


@pytest.fixture
def lab(lab_home, monkeypatch):
    """The lab with a Gemini session beside Claude alpha and Codex beta."""
    import relay_repl.lab.launcher as launcher
    from relay_repl.lab.install import lab_binary

    if not lab_binary("gemini-cli").exists():
        pytest.skip("no gemini in the lab clients: relay lab install")
    monkeypatch.setenv("RELAY_HOME", str(lab_home))
    monkeypatch.setenv("RELAY_LAB_CLIENTS", os.environ["RELAY_LAB_CLIENTS"])
    state = launcher.ensure_lab(claude=1, codex=1, gemini=1, progress=lambda m: None)
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    return state


def gemini_files_hold(text: str) -> bool:
    root = Path(os.environ["GEMINI_CLI_HOME"]) / ".gemini"
    return any(text in p.read_text(errors="replace") for p in root.rglob("*.json*") if p.is_file())


async def test_gemini_gamma_asks_claude_alpha_and_the_answer_reaches_gamma(lab):
    names = {s.name: s.kind for s in lab.sessions}
    assert names.get("gamma") == "gemini-cli", names
    await ask_approve_answer(lab, "gamma", "gemini:gamma", "claude:alpha", gemini_files_hold, claude_files_hold)
