"""What a cold `relay serve --stdio` (a host's relay, started per ssh channel) does before its first
send's plan, which the operator's relay waits for on a cold channel (issue 33, bench/hosts.py)."""

from __future__ import annotations

import json

from relay_repl.core.serve_wire import PROTOCOL_VERSION
from tests.frontends.test_send_cold import probe_in_a_claude_world


def lines(*requests: tuple[int, str, dict]) -> str:
    return "".join(json.dumps({"v": PROTOCOL_VERSION, "id": i, "op": op, "args": args}) + "\n" for i, op, args in requests)


HELLO_THEN_SEND = lines((1, "hello", {"protocol": PROTOCOL_VERSION}),
                        (2, "send", {"target": "claude:alpha", "body": "hello from the cold serve test", "want": "none"}))


def test_a_cold_serve_collects_no_garbage_before_its_first_plan_and_collects_again_once_it_is_shown(tmp_path):
    """issue 33: the host's relay collected ~90 times (~7-10 ms of its CPU) between its start and the
    plan of the channel's first send, every one over objects that live as long as the process; it is
    paused from its start (frontends/entry.py PAUSE_GC, system/startup_gc.py) like a one-liner's, and
    enabled again when that plan is shown (before it goes up the channel)."""
    got, _ = probe_in_a_claude_world(tmp_path, "serve", "--stdio", stdin=HELLO_THEN_SEND)
    assert got["PLAN"].endswith(" claude-code-socket")
    assert got["GC"] == "0 True"
