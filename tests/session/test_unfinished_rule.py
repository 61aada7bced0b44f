"""The plain form of the unfinished-send rule (session/core/unfinished_rule.py) against the models'."""

from __future__ import annotations

from relay_repl.core.delivery import DELIVERED, NOT_DONE
from relay_repl.session.core.unfinished_rule import FINISHED


def test_finished_is_the_delivered_and_not_done_states():
    assert FINISHED == {s.value for s in (*DELIVERED, *NOT_DONE)} | {"abandoned"}
