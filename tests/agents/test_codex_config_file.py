"""config.toml parsed once per version of the file (agents/codex/config_file.py): a send asks a
Codex thread's configuration two or three times, and an edit is always seen at the next ask."""

from __future__ import annotations

import os
import tomllib

import pytest

import relay_repl.agents.codex.config_file as config_file
from relay_repl.agents import reply_route
from relay_repl.agents.codex.replies import codex_options
from relay_repl.agents.codex.sqlite_home import sqlite_home
from relay_repl.core.plan import ReplyContext
from relay_repl.core.target import Target

TID = "01a22eb0-4959-7af2-9b96-b3b3c432bfde"
MCP = '\n[mcp_servers.relay]\ncommand = "/opt/venv/bin/relay"\nargs = ["mcp"]\n'
OLD = 1_700_000_000  # a change long past: not "racy"


def codex(home, config: str) -> Target:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config)
    os.utime(home / "config.toml", (OLD, OLD))
    return Target(kind="codex", prefix="codex", name="beta", address=TID, pid=4242, identified_by="test",
                  detail={"codex_home": str(home)}, evidence_file=str(home / f"rollout-x-{TID}.jsonl"))


@pytest.fixture
def parses(monkeypatch):
    """How many times a TOML text was parsed; RACY 0 so a file written by the test may be kept
    (its ctime is always now: utime cannot set it back)."""
    seen: list[str] = []
    real = tomllib.loads

    def counting(text: str, **kw):
        seen.append(text)
        return real(text, **kw)

    monkeypatch.setattr(tomllib, "loads", counting)
    monkeypatch.setattr(config_file, "RACY", 0.0)
    monkeypatch.setattr(config_file, "_parsed", {})
    return seen


def test_a_send_parses_an_unchanged_config_once(tmp_path, parses):
    """The plan's reply route and the send's own both ask codex_options: one parse, not one each."""
    t = codex(tmp_path, 'sandbox_mode = "danger-full-access"\n' + MCP)
    ctx = ReplyContext(relay_id="op-1", inbox="/run/inbox.sock")
    assert reply_route(t, ctx).via == "mcp"
    assert reply_route(t, ctx).via == "mcp" and codex_options(t).relay_reply
    assert len(parses) == 1


def test_an_edit_is_read_at_the_next_ask_even_with_the_same_size_and_mtime(tmp_path, parses):
    t = codex(tmp_path, 'sandbox_mode = "read-only"\n')
    assert not codex_options(t).relay_reply
    codex(tmp_path, 'sandbox_mode = "full-open"\n')  # same size, same mtime: the ctime moved
    assert codex_options(t).relay_reply
    (tmp_path / "config.toml").unlink()
    assert not codex_options(t).relay_reply  # gone: Codex's default, workspace-write
    assert len(parses) == 2


def test_a_file_changed_just_now_is_read_again_every_time(tmp_path, parses, monkeypatch):
    """Within RACY seconds of its last change an edit could keep size and times (one clock tick):
    no parse of such a file is reused."""
    monkeypatch.setattr(config_file, "RACY", 2.0)
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text('sandbox_mode = "read-only"\n')
    t = Target(kind="codex", prefix="codex", name="beta", address=TID, pid=4242, identified_by="test",
               detail={"codex_home": str(home)})
    codex_options(t)
    codex_options(t)
    assert len(parses) == 2


def test_a_broken_config_stays_a_one_line_problem_for_sqlite_home(tmp_path, parses):
    codex(tmp_path, 'sqlite_home = "db\n')
    for _ in range(2):
        found = sqlite_home(tmp_path, {})
        assert found.path == tmp_path and found.problem and "is not valid TOML" in found.problem
    assert not codex_options(codex(tmp_path, 'sqlite_home = "db\n')).relay_reply  # the default, not a traceback
    codex(tmp_path, 'sqlite_home = "db"\n')
    assert sqlite_home(tmp_path, {}).path == tmp_path / "db"
