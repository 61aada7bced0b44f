"""relay fidelity's verdicts: live results map to facts, a missing or failed check fails its
fact, screen readings become one fact each (the live run itself: `relay fidelity`)."""

from __future__ import annotations

from relay_repl.lab import fidelity
from relay_repl.lab.fidelity import FACTS, FidelityReport, _fact_results, _junit, _parse_screens

JUNIT = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.transports.test_native_live" name="test_codex_queue_to_an_idle_target" time="2.0"/>
<testcase classname="tests.transports.test_tmux_live" name="test_live_refusal_sends_zero_keys[draft-alpha]" time="1.5"/>
<testcase classname="tests.transports.test_tmux_live" name="test_live_refusal_sends_zero_keys[draft-beta]" time="1.5">
  <failure message="AssertionError: keys were sent">trace</failure></testcase>
</testsuite></testsuites>"""


def test_junit_results_map_to_facts_and_a_missing_check_fails(tmp_path):
    p = tmp_path / "j.xml"
    p.write_text(JUNIT)
    cases = _junit(p)
    assert cases["tests/transports/test_native_live.py::test_codex_queue_to_an_idle_target"][0] == "passed"
    by = {f.fact: f for f in _fact_results(cases, "1 failed")}
    assert by["codex queue schema and read-back (idle)"].ok
    refusal = by["preflight refusals send zero keys (draft, copy-mode, slash menu)"]
    assert not refusal.ok and "keys were sent" in refusal.evidence and "draft-beta" in refusal.evidence
    assert not by["codex rollout queue turns (busy)"].ok  # never ran: not a pass
    assert "not run" in by["codex rollout queue turns (busy)"].evidence
    assert len(by) == len(FACTS)


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


def test_fidelity_needs_a_checkout_and_says_so(monkeypatch, tmp_path):
    import pytest

    from relay_repl.core.errors import LabError

    monkeypatch.setattr(fidelity, "ROOT", tmp_path)
    with pytest.raises(LabError, match="source checkout"):
        fidelity._need_checkout()
