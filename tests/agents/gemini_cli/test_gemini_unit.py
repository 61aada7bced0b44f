"""Gemini CLI's package on recorded files: chat records, delivery evidence, the turn reply,
discovery's chat/name rules, reply routes, the lab's settings and readiness.

The chat files are real ones Gemini CLI 0.61.0 wrote in the lab (tests/agents/fixtures/);
the screens are the golden captures (tests/agents/screens/captures/gemini-cli-0.61.0/).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from relay_repl.agents.gemini_cli import chats
from relay_repl.agents.gemini_cli.kind import GeminiCliKind
from relay_repl.agents.gemini_cli.lab import lab_settings, mcp_answered_dir
from relay_repl.agents.gemini_cli.provider import Session, _names, _tie_chats, is_gemini, package_version
from relay_repl.agents.gemini_cli.replies import GeminiTurnWatch
from relay_repl.agents.kind import LAB_HOME, LabContext, LabPane
from relay_repl.agents.registry import kind_by_prefix, kind_for
from relay_repl.core.target import Target

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TYPED = FIX / "gemini-cli-0.61.0-chat-typed.jsonl"
MCP = FIX / "gemini-cli-0.61.0-chat-mcp.jsonl"
CAPS = Path(__file__).resolve().parents[1] / "screens" / "captures" / "gemini-cli-0.61.0"


def _home(tmp_path: Path, project: str = "gamma", root: str = "/w/gamma") -> Path:
    gdir = tmp_path / ".gemini"
    d = gdir / "tmp" / project / "chats"
    d.mkdir(parents=True)
    shutil.copy(TYPED, d / "session-2026-12-01T17-49-15af745b.jsonl")
    shutil.copy(MCP, d / "session-2026-12-01T17-52-97af7bf5.jsonl")
    (gdir / "projects.json").write_text(json.dumps({"projects": {root: project}}))
    return gdir


def test_the_registry_offers_gemini_by_kind_and_prefix():
    k = kind_for("gemini-cli")
    assert isinstance(k, GeminiCliKind) and kind_by_prefix("gemini") is k
    assert k.checks.provenance == "none" and k.facts.pin().npm_package == "@google/gemini-cli"
    assert k.facts.pin().version == "0.61.0" and [t.name for t in k.transports.specs()] == ["tmux"]
    lab = k.lab_driver().spec
    assert lab is not None and (lab.count_flag, lab.stub_api) == ("gemini", "google")


def test_typed_lines_are_user_records_with_exactly_the_text():
    hits = chats.typed_records(TYPED, 0, "second while busy")
    assert len(hits) == 1 and hits[0]["id"] == "0927cead-b83a-4ffa-ad62-5b54395211be"
    assert chats.typed_records(TYPED, 0, "second while") == []
    assert chats.typed_records(TYPED, hits[0]["offset"] + 1, "second while busy") == []
    # a function result is a user record too, but never typed text
    results = [r for _, r in chats.records(TYPED) if r.get("type") == "user" and chats.user_text(r) is None]
    assert results and "functionResponse" in results[0]["content"][0]


def test_agent_evidence_confirms_from_the_chat_file(tmp_path):
    gdir = _home(tmp_path)
    t = Target(kind="gemini-cli", prefix="gemini", name="gamma", address="15af745b-f87d-46f2-b29f-1e41a7d3fe98",
               identified_by="test", detail={"gemini_dir": str(gdir), "session_id": "15af745b-f87d-46f2-b29f-1e41a7d3fe98"})
    agent = GeminiCliKind()
    path = agent.evidence.evidence_file(t)
    assert path is not None and path.name == "session-2026-12-01T17-49-15af745b.jsonl"
    ev = agent.evidence.typed_evidence(path, 0, "typed while it works")
    assert ev.state == "confirmed" and ev.data["record"]["id"] == "c517dd6a-e8ef-41c3-af9d-ec09a7f738d5"
    assert agent.evidence.typed_evidence(path, 0, "never typed").state == "none"


def test_turn_reply_is_the_final_text_record_after_our_line():
    w = GeminiTurnWatch(TYPED, "please RUNTOOL2")
    r = w.poll()
    assert r is not None and r.status == "answered" and r.text == "tool done 2"
    assert "no tool calls" in r.record
    # the echo turn's empty-content record with tool calls is skipped
    w = GeminiTurnWatch(MCP, "do MCPTEST")
    r = w.poll()
    assert r is not None and r.text == "mcp done"
    assert GeminiTurnWatch(TYPED, "never typed").poll() is None


def test_chats_and_names_follow_the_address_rule(tmp_path):
    gdir = _home(tmp_path)
    files = chats.chats(gdir, "gamma")
    assert [c.short for c in files] == ["15af745b", "97af7bf5"]
    assert chats.find_chat(gdir, "97af7bf5") == files[1]
    t0 = 1796147340.0  # 2026-12-01T17:49:00Z, before both files' startTime
    one = Session(pid=10, start="1", argv=[], cwd="/w/gamma", gdir=gdir, project="gamma", started=t0)
    _tie_chats([one], {})
    assert one.chat is not None and one.chat.short == "97af7bf5"  # the newest started after it
    assert _names([one]) == {10: "gamma"}
    a = Session(pid=10, start="1", argv=[], cwd="/w/gamma", gdir=gdir, project="gamma", started=t0)
    b = Session(pid=11, start="2", argv=[], cwd="/w/gamma", gdir=gdir, project="gamma", started=t0 + 200)
    _tie_chats([a, b], {})
    assert a.chat is not None and a.chat.short == "15af745b"
    assert b.chat is not None and b.chat.short == "97af7bf5"
    assert _names([a, b]) == {10: "gamma-15af745b", 11: "gamma-97af7bf5"}
    c = Session(pid=12, start="3", argv=[], cwd="/w/gamma", gdir=gdir, project="gamma", started=t0)
    _tie_chats([c], {12: "15af745b"})  # the footer wins over start time
    assert c.chat is not None and c.chat.short == "15af745b" and "footer" in c.tied_by


def test_argv_rules():
    bundle = "/x/node_modules/@google/gemini-cli/bundle/gemini.js"
    assert is_gemini(["node", bundle]) and is_gemini(["/usr/bin/node", "--max-old-space-size=12075", bundle])
    assert is_gemini(["node", "/usr/local/bin/gemini", "--approval-mode", "yolo"])
    assert not is_gemini(["node", "/x/other.js"]) and not is_gemini(["gemini"]) and not is_gemini([])
    assert package_version(["node", "/nonexistent/bundle/gemini.js"]) is None


def test_reply_options_read_the_settings(tmp_path):
    gdir = tmp_path / ".gemini"
    gdir.mkdir()
    t = Target(kind="gemini-cli", name="gamma", address="s", identified_by="test", evidence_file="/c.jsonl",
               detail={"gemini_dir": str(gdir)})
    (gdir / "settings.json").write_text(json.dumps(lab_settings(["/venv/bin/relay", "mcp"])))
    o = GeminiCliKind().replies.options(t)
    assert o.relay_reply and o.mcp == f"mcpServers.relay in {gdir / 'settings.json'}" and o.mcp_note is None
    assert o.turn == "/c.jsonl"
    (gdir / "settings.json").write_text(json.dumps({"tools": {"sandbox": "docker"},
                                                   "mcpServers": {"r": {"command": "relay", "args": ["mcp"]}}}))
    o = GeminiCliKind().replies.options(t)
    assert not o.relay_reply and "sandbox" in o.relay_reply_why and o.mcp_note and "trust" in o.mcp_note


def _pane(name: str, pid: int = 42) -> LabPane:
    return LabPane(pane_id="%1", pane_pid=pid, screen=(CAPS / f"{name}.txt").read_text())


def _answered(ctx: LabContext, ppid: int, methods: list[str]) -> None:
    """A record as `relay mcp` writes it (system/mcp_answered.py) for a server whose parent is `ppid`."""
    d = mcp_answered_dir(ctx)
    d.mkdir(parents=True, exist_ok=True)
    (d / "999999.json").write_text(json.dumps({"pid": 999999, "ppid": ppid, "methods": methods, "at": 1.0}))


def test_lab_ready_needs_an_idle_screen_the_footer_s_chat_and_relay_mcp_discovered(tmp_path):
    home = tmp_path
    gdir = home / ".gemini"
    d = gdir / "tmp" / "gamma" / "chats"
    d.mkdir(parents=True)
    shutil.copy(MCP, d / "session-2026-12-01T17-52-97af7bf5.jsonl")
    ctx = LabContext(root=tmp_path, home=home, bin_dir=tmp_path / "bin", logs=tmp_path, api_key="k",
                     mcp_command=("/v/relay", "mcp"), base_urls={"gamma": "http://127.0.0.1:9"})
    k = GeminiCliKind()
    me = os.getpid()  # the "pane's" Gemini: this process (its own descendant), so the tree is read, not faked
    # idle with its chat file, but its relay MCP server has not answered tools/list: Gemini would queue
    # a prompt now (GM §6), so not ready
    assert k.lab_driver().ready(ctx, "gamma", _pane("fresh", me)) is None
    _answered(ctx, me, ["initialize"])
    assert k.lab_driver().ready(ctx, "gamma", _pane("fresh", me)) is None  # handshake only: discovery still runs
    _answered(ctx, 1, ["initialize", "tools/list"])
    assert k.lab_driver().ready(ctx, "gamma", _pane("fresh", me)) is None  # another process's server (pid 1's child)
    _answered(ctx, me, ["initialize", "tools/list"])
    ready = k.lab_driver().ready(ctx, "gamma", _pane("fresh", me))  # footer shows 97af7bf5
    assert ready is not None and ready.address == "97af7bf5-bb28-46ab-88ac-925c9b3744f3" and ready.pid == me
    assert "relay MCP server (pid 999999) answered tools/list" in (ready.note or "")
    assert k.lab_driver().ready(ctx, "gamma", _pane("busy", me)) is None  # no session item in that footer
    # without the relay MCP server configured there is no discovery to wait for
    bare = ctx.model_copy(update={"mcp_command": (), "root": tmp_path / "none"})
    assert k.lab_driver().ready(bare, "gamma", _pane("fresh", me)) is not None
    launch = k.lab_driver().launch(ctx, "gamma", True)
    assert launch.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    # its home is named once, in its LabSpec: the lab's $HOME, set for every lab process (Layout.base_env)
    assert k.lab_driver().spec.homes == {"GEMINI_CLI_HOME": LAB_HOME} and "GEMINI_CLI_HOME" not in launch.env
    # CI=true (a CI job's environment) makes Gemini CLI headless: the pane's command drops it
    assert launch.argv()[:5] == ["env", "-u", "CI", "-u", "GITHUB_ACTIONS"] and launch.argv()[5:] == list(launch.command)
    files = k.lab_driver().files(ctx, ["gamma"])
    settings = json.loads(files[home / ".gemini" / "settings.json"])
    assert settings["mcpServers"]["relay"] == {"command": "/v/relay", "args": ["mcp"], "trust": True,
                                               "env": {"RELAY_MCP_ANSWERED_DIR": str(mcp_answered_dir(ctx))}}
    assert "session-id" in settings["ui"]["footer"]["items"] and settings["telemetry"] == {"enabled": False}


def test_verify_reports_no_provenance_with_the_typed_records(tmp_path):
    from relay_repl.core.envelope import Envelope

    chat = tmp_path / "session-2026-12-01T17-49-15af745b.jsonl"
    line = Envelope.make(sender="operator:relay@h.1", to="gemini:gamma", id="h.1-7", hop=0, want="none",
                         body="hello").compose()
    chat.write_text(TYPED.read_text() + json.dumps({"id": "u1", "timestamp": "t", "type": "user",
                                                    "content": [{"text": line}]}) + "\n")
    t = Target(kind="gemini-cli", prefix="gemini", name="gamma", address="s", identified_by="test",
               evidence_file=str(chat))
    rep = GeminiCliKind().checks.verify("h.1-7", t, None)
    assert rep.verdict == "no provenance" and [f.turn_id for f in rep.turns] == ["u1"]
    assert "keeps no provenance" in rep.summary
    assert GeminiCliKind().checks.verify("h.1-8", t, None).verdict == "none found"


def _snap(name: str):
    """A golden capture as the transport's snapshot (tests/agents/screens/test_classifiers.load)."""
    from tests.agents.screens.test_classifiers import load

    return load(CAPS / f"{name}.json")[0]


def test_a_line_queued_while_gemini_starts_is_held_not_sent_and_blocks_the_next_send():
    """Live capture (GM §6): Enter on a fresh Gemini whose MCP discovery still ran queued the line with no
    turn running. The after-Enter hint says it is held, not sent; the screen then refuses a next send
    (`queue-held`), while a line queued behind a busy turn (busy_queued) blocks nothing."""
    from relay_repl.agents.gemini_cli import screen

    held = screen.classify(_snap("mcp_wait_queued"))
    assert held.kind == "idle" and held.blockers == ["queue-held"] and not held.typable
    assert any("MCP servers ready" in r and "Waiting for MCP servers to initialize" in r for r in held.reasons)
    h = screen.submitted(_snap("fresh"), _snap("mcp_wait_queued"), "which branch are you on")
    assert h.queued and not h.turn_running and h.composer_emptied
    assert any("not sent to the model yet" in r for r in h.reasons), h.reasons
    busy = screen.classify(_snap("busy_queued"))
    assert busy.kind == "busy" and "queued" in busy.hints and "queue-held" not in busy.blockers
