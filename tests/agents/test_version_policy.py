"""The version policy at the seams: pinned and machine-verified versions pass, any other
version is refused by every transport that trusts reverse-engineered behaviour, with one
line naming the version, what is unverified and `relay fidelity`."""

from __future__ import annotations

import pytest

from relay_repl.agents import versions
CLAUDE, CODEX = "claude-code", "codex"
from relay_repl.core.errors import PolicyRefusal
from relay_repl.core.target import Target
from relay_repl.transports.socket_message import SocketMessageTransport, SocketTransport
from relay_repl.transports.durable_queue import DurableQueueTransport
from relay_repl.transports.ranking import choose
from relay_repl.transports.tmux import TmuxTransport

PINNED = {CLAUDE: versions.verified_version(CLAUDE), CODEX: versions.verified_version(CODEX)}


def _target(kind: str, version: str | None, **kw) -> Target:
    base = dict(kind=kind, name="alpha", live=True, state="idle", pane="%1", pid=123,
                identified_by="test", client_version=version, client_status=versions.version_status(kind, version))
    if kind == CLAUDE:
        base.update(address="/tmp/x.sock", transports=("claude-code-socket", "claude-code-message", "tmux"))
    else:
        base.update(address="0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", transports=("codex-queue", "tmux"),
                    detail={"thread_id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"})
    base.update(kw)
    return Target(**base)


def test_status_words():
    assert versions.version_status(CLAUDE, PINNED[CLAUDE]) == "pinned"
    assert versions.version_status(CLAUDE, "9.9.9") == "unverified"
    assert versions.version_status(CODEX, None) == "unknown"
    assert versions.is_verified(CODEX, PINNED[CODEX]) and not versions.is_verified(CODEX, "9.9.9")


def test_recording_a_pass_lifts_the_refusal_for_that_version_only():
    assert versions.version_status(CLAUDE, "9.9.9") == "unverified"
    path = versions.record_verified(CLAUDE, "9.9.9", facts=20)
    assert path.is_file() and path.parent == versions.verified_file().parent
    assert versions.version_status(CLAUDE, "9.9.9") == "verified"
    assert versions.version_status(CLAUDE, "9.9.10") == "unverified"
    assert versions.version_status(CODEX, "9.9.9") == "unverified"  # per kind
    assert versions.verified_here(CLAUDE)["9.9.9"]["facts"] == 20


def test_a_corrupt_record_file_verifies_nothing():
    path = versions.verified_file()
    path.parent.mkdir(parents=True, exist_ok=True)  # reading never makes the state directory; a writer does
    path.write_text("{not json")
    assert versions.version_status(CLAUDE, "9.9.9") == "unverified"


@pytest.mark.parametrize("transport, kind", [
    (TmuxTransport(), CLAUDE), (TmuxTransport(), CODEX), (SocketTransport("claude-code-socket"), CLAUDE),
    (SocketMessageTransport("claude-code-message"), CLAUDE), (DurableQueueTransport("codex-queue"), CODEX),
])
def test_every_reverse_engineered_path_refuses_an_unverified_version_in_one_line(transport, kind):
    why = transport.refusal(_target(kind, "9.9.9"))
    assert why is not None and "\n" not in why
    assert f"{kind} 9.9.9 is not verified" in why and "relay fidelity" in why
    assert PINNED[kind] in why  # what it was measured on


@pytest.mark.parametrize("kind", [CLAUDE, CODEX])
def test_choose_refuses_naming_relay_fidelity_and_lifts_after_a_recorded_pass(kind):
    t = _target(kind, "9.9.9")
    with pytest.raises(PolicyRefusal) as exc:
        choose(t, [TmuxTransport(), DurableQueueTransport("codex-queue")], requested="tmux")
    assert "relay fidelity" in str(exc.value) and "9.9.9" in str(exc.value)
    versions.record_verified(kind, "9.9.9", facts=1)
    t2 = _target(kind, "9.9.9")
    assert t2.client_status == "verified"
    assert TmuxTransport().refusal(t2) is None


def test_the_plan_names_the_client_version_and_status():
    assert f"{CLAUDE} 9.9.9 unverified" in _target(CLAUDE, "9.9.9").describe()
    assert f"{CODEX} {PINNED[CODEX]} pinned" in _target(CODEX, PINNED[CODEX]).describe()


def test_fidelity_candidate_is_verified_only_for_the_named_versions(monkeypatch):
    monkeypatch.setenv("RELAY_FIDELITY_CANDIDATE", f"{CLAUDE}=9.9.9,{CODEX}=8.8.8")
    assert versions.version_status(CLAUDE, "9.9.9") == "verified"
    assert versions.version_status(CLAUDE, "8.8.8") == "unverified"
