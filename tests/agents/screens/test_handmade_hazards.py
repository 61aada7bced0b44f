"""Screens reported from the field for newer clients than our pins, made by hand from a golden
capture (issue 32): each must read as the right state, or fail closed with a reason the
preflight shows; never a silent wrong verdict.

Claude Code's prompt suggestion (`promptSuggestionEnabled`, CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION):
a predicted next prompt drawn in the EMPTY composer after a turn. A strict preflight reading its
words as an operator's draft would refuse every send to an idle session; reading a real draft as
empty would type over the operator's words. handmade/claude-code-2.1.332/ holds after_turn with the
suggestion drawn three ways (each capture's `description` says how): as Claude draws placeholders
(fake cursor + SGR 2) it is empty and typable; drawn in a grey colour without SGR 2 it cannot be
told from a draft and is refused as one (the reason names the text); dim but with the cursor after
it, nothing proves the composer empty: unknown, refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.screens.test_classifiers import _classifier, load

HANDMADE = Path(__file__).parent / "handmade"


@pytest.mark.parametrize("meta_path", sorted(HANDMADE.glob("*/*.json")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_handmade_field_screen(meta_path: Path):
    snap, meta = load(meta_path)
    assert meta["handmade"] is True and len(snap.lines) == meta["pane_height"]
    r = _classifier(meta["client"]).classify(snap)
    exp = meta["expected"]
    why = "\n".join(r.reasons)
    assert (r.kind, r.composer, sorted(r.blockers)) == (exp["kind"], exp["composer"], sorted(exp["blockers"])), why
    assert set(exp["hints"]) <= set(r.hints), why
    assert r.typable == (exp["composer"] == "empty" and not exp["blockers"])
    if not r.typable:  # the preflight's refusal carries the reason: the text it saw and why it stops
        assert "fix the failing lint check" in why and ("draft" in r.blockers or "composer-unknown" in r.blockers)
    else:
        assert "dim placeholder" in why and r.composer_text is None


def test_the_dim_suggestion_is_never_taken_for_the_payload():
    """Staging types over the suggestion: the payload check must not be satisfied by the dim words."""
    snap, _ = load(HANDMADE / "claude-code-2.1.332" / "idle_autosuggestion_dim.json")
    cls = _classifier("claude-code")
    assert not cls.payload_visible(snap, "fix the failing lint check")
