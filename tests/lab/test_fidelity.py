"""relay fidelity's verdicts: live results map to facts, a missing or failed check fails its
fact, screen readings become one fact each, every fact names checks that exist (the live run
itself: `relay fidelity`; the checks are also what the live tests call)."""

from __future__ import annotations

import json

from relay_repl.lab import fidelity
from relay_repl.lab.fidelity import FACTS, FidelityReport, _fact_results, _parse_screens, _results
from relay_repl.lab.fidelity.checks import all_checks

RESULTS = {
    "native:codex_queue_to_an_idle_target": {"outcome": "passed", "why": "2.0s", "seconds": 2.0},
    "tmux:refusal_sends_zero_keys[draft-alpha]": {"outcome": "passed", "why": "1.5s", "seconds": 1.5},
    "tmux:refusal_sends_zero_keys[draft-beta]": {"outcome": "failed", "why": "AssertionError: keys were sent",
                                                 "seconds": 1.5},
}


def test_check_results_map_to_facts_and_a_missing_check_fails(tmp_path):
    p = tmp_path / "results.json"
    p.write_text(json.dumps(RESULTS))
    cases = _results(p)
    assert cases["native:codex_queue_to_an_idle_target"][0] == "passed"
    by = {f.fact: f for f in _fact_results(cases, "1 failed")}
    assert by["codex queue schema and read-back (idle)"].ok
    refusal = by["preflight refusals send zero keys (draft, copy-mode, slash menu)"]
    assert not refusal.ok and "keys were sent" in refusal.evidence and "draft-beta" in refusal.evidence
    assert not by["codex rollout queue turns (busy)"].ok  # never ran: not a pass
    assert "not run" in by["codex rollout queue turns (busy)"].evidence
    assert len(by) == len(FACTS)


def test_every_fact_names_checks_that_exist_and_every_check_proves_a_fact():
    known = all_checks()
    for spec in FACTS:
        for c in spec.checks:
            assert any(k == c or k.startswith(c + "[") for k in known), f"{spec.fact}: no check {c}"
    proven = {k for k in known for spec in FACTS for c in spec.checks if k == c or k.startswith(c + "[")}
    assert proven == set(known)


def test_screen_lines_become_facts():
    out = ("  ok        claude-code/fresh: idle/empty hints=['fresh']\n"
           "  MISMATCH  codex/busy: idle/empty hints=[]  (expected ('busy',...))\nnoise\n")
    facts, _ = _parse_screens(out)
    assert [(f.fact, f.ok, f.kinds) for f in facts] == [("screen claude-code/fresh", True, ["claude-code"]),
                                                         ("screen codex/busy", False, ["codex"])]


def test_table_marks_each_fact_and_names_refused_paths():
    facts, _ = _parse_screens("  MISMATCH  codex/busy: idle/empty hints=[]\n")
    r = FidelityReport(clients="latest", prefix="/x", versions={"claude-code": "9.9.9", "codex": "8.8.8"}, ok=False,
                       seconds=1, facts=facts, refused_paths={"codex": ["tmux"]})
    text = r.table()
    assert "✘ screen codex/busy" in text and "0/1 facts hold" in text
    assert "codex 8.8.8 stays unverified: refused paths: tmux" in text


def test_fidelity_imports_no_test_code_nor_pytest(tmp_path):
    """What an installed wheel has is enough: the runner, the checks and the recorder import with
    pytest, tests and bench made unimportable, from a directory that is not a checkout."""
    import subprocess
    import sys

    code = ("import sys\n"
            "for m in ('pytest', 'tests', 'bench', '_pytest'): sys.modules[m] = None\n"
            "import relay_repl.lab.fidelity as f, relay_repl.lab.fidelity.checks as c, relay_repl.lab.fidelity.screens\n"
            "assert len(c.all_checks()) >= len(f.FACTS)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_latest_equal_to_the_pins_is_the_pinned_cache_wherever_it_is(monkeypatch, tmp_path):
    """`relay fidelity --clients latest` when npm's newest are the pins: the pinned cache the lab uses
    ($RELAY_LAB_CLIENTS when set), not a second 800 MB install under RELAY_HOME."""
    from relay_repl.lab.install import VERIFIED_VERSIONS, set_root_for

    monkeypatch.setenv("RELAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RELAY_LAB_CLIENTS", str(tmp_path / "shared-clients"))
    assert set_root_for(dict(VERIFIED_VERSIONS)) == tmp_path / "shared-clients"
    other = {k: "9.9.9" for k in VERIFIED_VERSIONS}
    assert set_root_for(other) == tmp_path / "home" / ("clients" + "-9.9.9" * len(other))  # one per pinned kind


def test_a_kind_no_fact_checks_is_not_verified_by_zero_checks():
    """Gemini CLI runs in the lab before fidelity has facts about it: its version must stay unverified
    (before, an empty list of failed facts recorded it as verified on this machine)."""
    from relay_repl.lab.fidelity import FactResult, verdicts

    facts = [FactResult(fact="registry", kinds=["claude-code", "codex"], paths="discovery", ok=True, evidence="ok"),
             FactResult(fact="queue", kinds=["codex"], paths="codex-queue", ok=False, evidence="failed")]
    got = {"claude-code": "1.0.0", "codex": "2.0.0", "gemini-cli": "3.0.0"}
    recorded, refused = verdicts(facts, list(got), got)
    assert recorded == {"claude-code": "1.0.0"}
    assert refused["codex"] == ["codex-queue"]
    assert "no fact about this kind is checked yet" in refused["gemini-cli"][0]


def test_every_lab_kind_has_fidelity_facts_and_gemini_is_among_them():
    """`relay fidelity` covers every kind the lab runs (Gemini CLI included), through its own package's
    facts: before, Gemini had none and its version stayed unverified by every run."""
    from relay_repl.agents import registry

    lab_kinds = [k.facts.kind for k in registry.kinds() if k.lab_driver() is not None]
    assert "gemini-cli" in lab_kinds
    for kind in lab_kinds:
        assert [f for f in FACTS if kind in f.kinds], f"no fidelity fact about {kind}"
        assert any(c.startswith("discovery:gemini_") for f in FACTS if "gemini-cli" in f.kinds for c in f.checks)


def test_gemini_typed_evidence_is_read_from_its_own_chat_file(tmp_path):
    """The tmux check's reading of Gemini's confirm data re-reads the chat file: a `user` record of exactly
    the typed text holds; the same id with other text (the last line for an id wins) does not."""
    from pathlib import Path

    from relay_repl.agents.gemini_cli.fidelity import tmux_unconfirmed

    chat = Path(__file__).parents[1] / "agents" / "fixtures" / "gemini-cli-0.61.0-chat-typed.jsonl"
    rid = "eb07694f-5f59-4aee-bd9a-cd0d39a51e5b"
    assert tmux_unconfirmed({"chat": str(chat), "record": {"id": rid}}, "hello there") is None
    assert "not a user record of exactly" in (tmux_unconfirmed({"chat": str(chat), "record": {"id": rid}}, "hello") or "")
    moved = tmp_path / "chat.jsonl"
    moved.write_text(chat.read_text() + json.dumps({"id": rid, "type": "user", "content": [{"text": "edited"}]}) + "\n")
    assert tmux_unconfirmed({"chat": str(moved), "record": {"id": rid}}, "hello there") is not None
    assert "no chat file record" in (tmux_unconfirmed({}, "x") or "")


def test_a_failed_kind_check_is_located_in_the_kind_module():
    """A check that moved into agents/<kind>/fidelity.py is still located at its own failing line."""
    from relay_repl.agents.claude_code import fidelity as mod
    from relay_repl.lab.fidelity.checks import _one

    class NoLab:
        def stub(self):
            raise AssertionError("no lab here")

    r = _one(lambda: mod.NATIVE_CHECKS["claude_socket_to_an_idle_target"](NoLab()))  # type: ignore[arg-type]
    assert r.outcome == "failed"
    assert "no lab here" in r.why and "at fidelity.py:" in r.why and "lab.stub()" in r.why, r.why
