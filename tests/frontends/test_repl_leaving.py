"""What the REPL says as it ends (issue 39): what it removed, deliveries still pending, and that the
lab keeps running, with the command that stops it."""

from __future__ import annotations

from types import SimpleNamespace

import relay_repl.lab.lab_status as lab_status
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.frontends.repl import leaving


def test_leaving_names_what_was_removed_what_is_pending_and_the_running_lab(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAY_LAB_DIR", str(tmp_path / "lab"))
    lab = SimpleNamespace(tmux_socket="relay-lab-1234", sessions=[SimpleNamespace(name="alpha", alive=True),
                                                                  SimpleNamespace(name="beta", alive=True),
                                                                  SimpleNamespace(name="gamma", alive=False)])
    monkeypatch.setattr(lab_status, "status", lambda: lab)
    pending = Delivery(relay_id="me-2", target="codex:beta", transport="tmux", state=DeliveryState.SUBMITTED)
    done = Delivery(relay_id="me-1", target="codex:beta", transport="tmux", state=DeliveryState.IN_TURN)
    real = SimpleNamespace(deliveries=[done, pending])
    assert leaving(real, ["/run/relay/inbox/7.sock", "/c/sessions/7.json"]) == [
        "relay: left the REPL; removed /run/relay/inbox/7.sock, /c/sessions/7.json",
        "  1 delivery(ies) still pending, kept in the ledger: `relay debug me-2` looks at one",
        "  the lab keeps running (alpha, beta; tmux -L relay-lab-1234): `relay lab down` stops it",
    ]


def test_off_the_lab_or_with_it_down_nothing_is_said_of_it(monkeypatch, tmp_path):
    monkeypatch.delenv("RELAY_LAB_DIR", raising=False)
    assert leaving(None, []) == ["relay: left the REPL"]
    monkeypatch.setenv("RELAY_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.setattr(lab_status, "status", lambda: None)
    assert leaving(None, []) == ["relay: left the REPL"]
