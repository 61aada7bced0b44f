"""A peer process that writes one Claude-socket-shaped line into the operator's inbox.

Run as `python -c PEER_LINE INBOX_PATH LINE`: its own process, so the inbox judges it by the kernel
pid of a real connection (SO_PEERCRED), as it judges a real agent's.
"""

from __future__ import annotations

import textwrap

PEER_LINE = textwrap.dedent("""
    import json, socket, sys
    path, line = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    frame = {"type": "user", "message": {"role": "user", "content": line}, "msg_id": "m", "from": "test"}
    s.sendall(json.dumps(frame).encode() + b"\\n")
    s.shutdown(socket.SHUT_WR)
    while s.recv(4096):
        pass
""")
