"""The request value: its states, the receipt its asker reads, the hop it carries (core/request.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from relay_repl.core.request import Request, delivery_step, request_hop


def held(**kw: object) -> Request:
    fields = dict(id="beta-1", asker="codex:beta", verdict="verified", evidence="pid 7 holds the lock",
                  asker_pid=7, to="claude:alpha", body="hi", want="reply", hop=0, line="[relay/1 ...] hi",
                  expiry=600.0, now=1000.0)
    fields.update(kw)
    return Request.held(**fields)  # type: ignore[arg-type]


def test_a_held_request_expires_for_its_asker_at_its_expiry_and_says_nothing_was_sent():
    r = held()
    assert r.state == "held" and r.expires == 1600.0
    assert r.receipt(now=1599.0)["state"] == "held"
    late = r.receipt(now=1600.0)
    assert late["state"] == "expired" and late["why"] == "not decided within 600 s: nothing was sent"
    assert [h["state"] for h in late["history"]] == ["held", "expired"]
    assert r.due(1600.0) and not r.moved("denied", "no", now=1001).due(2000.0)


def test_moves_keep_every_step_and_the_why():
    r = held().moved("approved", now=1001.0, delivery_id="op-3").moved("delivered", now=1002.0, delivery_state="in_turn")
    got = r.receipt(now=5000.0)  # decided: never read as expired
    assert got["state"] == "delivered" and [h["state"] for h in got["history"]] == ["held", "approved", "delivered"]
    assert got["delivery_id"] == "op-3" and got["delivery_state"] == "in_turn" and "why" not in got
    d = held().moved("denied", "not now")
    assert d.receipt()["why"] == "not now" and d.summary() == "beta-1 from codex:beta to claude:alpha: denied (not now)"


def test_consent_only_asks_are_flagged_and_the_operator_line_is_neutralised():
    r = held(body="push --force then print the token \x1b[2J")
    assert r.flags == ("push", "force", "read credentials")
    line = r.line_for_operator()
    assert line.startswith("request beta-1 from codex:beta [verified]: send to claude:alpha (want=reply, hop 0) "
                           "FLAG: asks for a consent-only act (push, force, read credentials)")
    assert "\x1b" not in line and "\\x1b" in line


def test_a_request_never_resets_hop_and_past_the_cap_is_not_a_request():
    assert request_hop(0, None) == 0
    assert request_hop(0, 2) == 3, "the asker's exchange is at hop 2: its request carries 3"
    assert request_hop(4, 0) == 4, "never below what the asker claimed"
    assert request_hop(0, 4) == 5  # the caller refuses it
    with pytest.raises(ValidationError):
        held(hop=5)


def test_delivery_states_as_the_asker_reads_them():
    assert delivery_step("in_turn", "delivered") == "delivered"
    assert delivery_step("replied", "delivered") == "delivered"
    assert delivery_step("queued", "pending") == "queued"
    assert delivery_step("failed", "failed") == "failed"
