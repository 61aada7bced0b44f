"""Live: a lab of eight sessions (4 Claude Code + 4 Codex) in which every one answers.

Why: with several Codex threads in one CODEX_HOME started together, Codex 0.171.0 deletes a
sibling thread's fresh shell snapshot (its clean-up removes every snapshot whose thread has
no rollout yet), and that thread then runs its commands through a login shell whose
/etc/profile resets PATH: `relay reply` is "command not found" and the operator waits out
the timeout (adapters/codex.md, Gaps). The lab starts its Codex threads one at a time; this
module proves every Codex thread keeps its snapshot, and the whole eight-session lab answers,
each reply verified by the kernel pid of the session that sent it (the lab's Codex agents
answer by relay_reply on the relay MCP server their client offers, so the snapshot is proven
by the first test, not by the replies).

One lab for this module (its own RELAY_HOME), torn down at the end.
"""

from __future__ import annotations

import relay_repl.agents.codex.lab as codex_lab
import anyio
import pytest

import relay_repl.lab.launcher as launcher
from relay_repl.testing.labs import private_lab_home
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]

REPLY_WAIT = 180.0  # eight turns on a 2-core machine; each stub turn takes seconds, not minutes


@pytest.fixture(scope="module")
def lab_size():
    return 4, 4


@pytest.fixture(scope="module")
def lab_home(tmp_path_factory):
    with private_lab_home(tmp_path_factory, "eight") as home:
        yield home


def test_every_codex_thread_keeps_its_shell_snapshot(lab):
    codexes = lab.of_kind("codex")
    assert len(codexes) == 4 and len({s.session_id for s in codexes}) == 4
    lay = launcher.layout()
    missing = [s.name for s in codexes if not codex_lab.thread_shell_snapshots(lay.root, s.session_id or "")]
    assert not missing, f"no shell snapshot for {missing} in {codex_lab.home(lay.root) / 'shell_snapshots'}"


async def test_all_eight_sessions_answer_want_reply_with_a_verified_reply(lab):
    specs = [f"{'claude' if s.kind == 'claude-code' else 'codex'}:{s.name}" for s in lab.sessions]
    assert len(specs) == 8
    async with live_session([True] * (1 + len(specs))) as (s, gate, inbox):
        assert await s.register_inbox() is True  # the Claude agents answer by SendMessage to the listed inbox
        sent = []
        for spec in specs:
            d = await s.send(spec, f"eight-session check for {spec}", want="reply", timeout=60)
            assert d.outcome == "delivered", d.summary()
            sent.append((spec, d))
        with anyio.move_on_after(REPLY_WAIT):
            while any(d.reply is None for _, d in sent):
                await anyio.sleep(0.2)
        unanswered = [f"{spec}: {d.summary()}" for spec, d in sent if d.reply is None]
        assert not unanswered, f"no verified reply from {unanswered}; inbox: {[m.line for m in inbox.received]}"
        for spec, d in sent:
            v = d.reply.verdict
            assert v is not None and v.verdict == "verified" and v.session == spec, (spec, str(v))
            assert d.relay_id in d.reply.line  # the body names the message it answers
