"""What a cold `relay serve --stdio` (a host's relay, started per ssh channel) does before its first
send's plan, which the operator's relay waits for on a cold channel (issue 33, bench/hosts.py)."""

from __future__ import annotations

import ast
import json

from relay_repl.core.serve_wire import PROTOCOL_VERSION
from tests.frontends.test_send_cold import probe_in_a_claude_world, stand_in_claude


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


def test_a_cold_serves_first_send_wanting_an_answer_starts_the_claude_version_before_the_models(tmp_path):
    """issue 33: a send that waits for a Claude session's answer first lists this host's inbox as a Claude
    peer, which asks `claude --version` (the verified client only). The serve starts that process from the
    kind's `reply_route_soon` hook when the send arrives, before session.app is imported, so it runs beside
    those imports (~10 ms of the cold channel's wall) instead of after them; the listing's plan is the same."""
    claude = stand_in_claude(tmp_path)
    wanting = lines((1, "hello", {"protocol": PROTOCOL_VERSION}),
                    (2, "send", {"target": "claude:alpha", "body": "an answer, please", "want": "reply"}))
    got, homes = probe_in_a_claude_world(tmp_path, "serve", "--stdio", stdin=wanting, path=f"{claude.parent}:/usr/bin:/bin",
                                         plan="Claude registry")
    assert str(homes["claude"] / "sessions") in got["PLAN"]  # the first plan: listing the inbox as a peer
    spawned, models = ast.literal_eval(got["SPAWNED"]), ast.literal_eval(got["MODELS_AT_SPAWN"])
    versions = [i for i, argv in enumerate(spawned) if argv == [str(claude), "--version"]]
    assert len(versions) == 1  # one process, taken by the listing's own version check
    assert models[versions[0]] is False  # started before pydantic (so before session.app)


def test_a_send_wanting_no_answer_starts_nothing_early(tmp_path):
    """The head start is only for the route's first question: a send that waits for no answer starts no
    `--version` before its models (its plan lists nothing)."""
    claude = stand_in_claude(tmp_path)
    got, _ = probe_in_a_claude_world(tmp_path, "serve", "--stdio", stdin=HELLO_THEN_SEND, path=f"{claude.parent}:/usr/bin:/bin")
    assert [argv for argv in ast.literal_eval(got["SPAWNED"]) if argv[1:2] == ["--version"]] == []
