"""The one classifier skeleton (agents/screens/skeleton.py) every kind's classifier fills with its marks:
the pane's own state, no composer (a dialog by its marks, else not recognised), the composer's blockers.
The goldens (test_classifiers.py, test_handmade_hazards.py) prove each kind reads its captures as before."""

from __future__ import annotations

import re

from relay_repl.agents.registry import kinds
from relay_repl.agents.screens import skeleton
from relay_repl.agents.screens.model import Snapshot
from relay_repl.agents.screens.skeleton import Reading

DIALOG = [re.compile(r"Do you want to proceed\?")]


def test_a_dead_pane_is_the_whole_reading_and_copy_mode_a_blocker():
    dead = Reading(Snapshot(lines=["x"], pane_dead=True), "Toy").pane()
    assert dead is not None and (dead.kind, dead.composer, dead.blockers) == ("unknown", "absent", ["dead"])
    r = Reading(Snapshot(lines=["x"], pane_in_mode=True, pane_mode="copy-mode"), "Toy")
    assert r.pane() is None and r.blockers == ["copy-mode"] and r.reasons[0].endswith("not Toy")


def test_no_composer_is_a_dialog_by_its_marks_or_a_screen_not_recognised():
    r = Reading(Snapshot(lines=[]), "Toy")
    seen = r.no_composer(["Do you want to proceed?"], DIALOG, "dialog marks", "`>` composer")
    assert seen.blockers == ["dialog"] and seen.reasons == ["no composer; dialog marks ['Do you want to proceed\\\\?']"]
    other = Reading(Snapshot(lines=[]), "Toy").no_composer(["enter select"], DIALOG, "dialog marks", "`>` composer",
                                                            other=([re.compile("enter select")], ["enter select"], "menu"))
    assert other.blockers == ["dialog"] and other.reasons == ["menu"]
    blank = Reading(Snapshot(lines=[]), "Toy").no_composer([""], DIALOG, "dialog marks", "`>` composer")
    assert blank.blockers == ["no-composer"] and blank.reasons == ["no `>` composer: screen not recognised"]
    assert blank.composer == "absent" and not blank.typable


def test_the_composers_own_blockers_and_the_reading():
    r = Reading(Snapshot(lines=[]), "Toy")
    r.composer_blockers("draft")
    r.composer_blockers("unknown")
    r.composer_blockers("empty")
    assert r.blockers == ["draft", "composer-unknown"]
    done = Reading(Snapshot(lines=[]), "Toy").done("idle", "empty", "", (3, 3))
    assert done.typable and done.composer_text is None and done.composer_rows == (3, 3)


def test_every_kinds_classifier_fills_the_one_skeleton():
    for k in kinds():
        mod = k.screen.classifier()
        assert mod is not None and getattr(mod, "Reading", None) is skeleton.Reading, k.facts.kind
