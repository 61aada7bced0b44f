from __future__ import annotations

import socket

from relay_repl.core.target import Target
from relay_repl.transports.socket_message import SocketTransport


def target(sock: str | None) -> Target:
    return Target(kind="claude-code", prefix="claude", name="alpha", address=sock or "", pid=1, live=True,
                  state="idle", transports=("claude-code-socket",), identified_by="test",
                  socket=sock or None)


def test_refuses_anything_but_a_socket_we_own(tmp_path):
    t = SocketTransport("claude-code-socket")
    assert "no messagingSocketPath" in t.refusal(target(None))
    assert "does not exist" in t.refusal(target(str(tmp_path / "gone.sock")))
    plain = tmp_path / "plain.sock"
    plain.write_text("")
    assert "is not a socket" in t.refusal(target(str(plain)))
    real = tmp_path / "real.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(real))
    try:
        assert t.refusal(target(str(real))) is None
    finally:
        s.close()
