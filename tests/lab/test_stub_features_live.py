"""Live: the stub's scripted features against the real clients — a scripted busy hold,
and a SendMessage from one Claude lab agent reaching another."""

from __future__ import annotations

import json
import os
import time

import pytest
from libtmux.test.retry import retry_until


import relay_repl.agents.claude_code.lab as claude_lab
import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
from relay_repl.lab.stubs.client import SyncStubClient, send_message_rule

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def lab_size():
    return 2, 2


@pytest.fixture(scope="module")
def lab_home(lab_home_2x2):
    """conftest's shared 2+2 lab: two Claude sessions (alpha, beta) and the Codex gamma."""
    return lab_home_2x2


def status_of(lab, name: str) -> str:
    s = launcher.status().session(name)
    rec = json.loads((claude_lab.config_dir(launcher.layout().root) / "sessions" / f"{s.pid}.json").read_text())
    return rec.get("status")


def type_into(name: str, text: str) -> None:
    helpers.submit(name, text)


def test_a_scripted_hold_keeps_each_client_busy_then_idle(lab):
    stub = SyncStubClient(launcher.status().stub.control)
    stub.hold("alpha", 4, text="held reply", match="hold me")
    stub.hold("gamma", 4, text="held reply", match="hold me")
    t0 = time.monotonic()
    type_into("alpha", "hold me please")
    type_into("gamma", "hold me please")
    assert retry_until(lambda: status_of(lab, "alpha") == "busy", 10, raises=False), status_of(lab, "alpha")
    assert retry_until(lambda: "esc to interrupt" in helpers.capture("gamma"), 10, raises=False)
    helpers.wait_idle("alpha", 30)
    helpers.wait_idle("gamma", 30)
    assert time.monotonic() - t0 >= 3.5
    assert status_of(lab, "alpha") == "idle"
    for name in ("alpha", "gamma"):
        assert "held reply" in helpers.capture(name)


def test_sendmessage_from_one_claude_agent_reaches_another(lab):
    st = launcher.status()
    stub = SyncStubClient(st.stub.control)
    stub.clear_requests("beta")
    stub.add_rule("alpha", send_message_rule("beta", "lab hello from alpha to beta", match="greet beta"))
    type_into("alpha", "greet beta natively")
    reqs = stub.requests("beta", kind="main", min_count=1, timeout=30)
    assert any("lab hello from alpha to beta" in json.dumps(r.body) for r in reqs)
    beta = st.session("beta")
    origin = None

    def peer_record() -> bool:
        nonlocal origin
        if os.path.exists(beta.transcript):
            for line in open(beta.transcript, encoding="utf-8"):
                d = json.loads(line)
                o = d.get("origin") or (d.get("attachment") or {}).get("origin")
                if o and o.get("kind") == "peer" and "lab hello from alpha" in line:
                    origin = o
        return origin is not None

    retry_until(peer_record, 20, interval=0.2, raises=False)
    assert origin is not None, "beta's transcript has no peer origin record"
    assert origin["verifiedPeerPid"] == st.session("alpha").pid
    assert origin.get("name") == "alpha"
    helpers.wait_idle("alpha", 30)
    helpers.wait_idle("beta", 30)
