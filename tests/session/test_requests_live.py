"""Live, against the real clients in the lab, answered in a real terminal (tmux): an agent asks relay
to send (issue 31's Done-when lines).

The operator's REPL runs in a tmux pane of its own (`relay --lab`), as an operator uses it. A lab
agent is prompted in its own pane (`ask <target> via relay (want=reply): ...`); its stub model
makes it call relay_send on the relay MCP server its real client offers (stubs/converse.py). The
REPL shows the request, `approve_request` shows the plan, `y` then Enter sends it; the receiver
answers the ordinary way, and after a second `y` the answer reaches the asker, whose own file
(Codex's rollout, Claude's transcript) then holds `re=<request id>`. The asker reads its
request's steps with relay_request_status. Denied and unestablished requests send nothing.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.stubs.client import StubClient
from tests.support.tmuxdrive import Screen

pytestmark = [pytest.mark.live, pytest.mark.anyio]

CLAUDE, CODEX = "claude:alpha", "codex:beta"
# no trailing "?": typed into Gemini CLI's composer, a "?" did not reach its model (the lab prompt arrived without it)


def start_repl() -> Screen:
    screen = Screen([sys.executable, "-m", "relay_repl", "--lab"], dict(os.environ, TERM="xterm-256color"))
    screen.wait_for(lambda s: "claude:alpha" in s and "codex:beta" in s and ">>>" in s, timeout=90)
    return screen


def register(screen: Screen) -> None:
    """List the REPL's inbox as a Claude peer (a Claude agent answers with SendMessage to it)."""
    screen.type_line("ok = await session.register_inbox()")
    screen.wait_for("Proceed? [y/N]", timeout=30)
    screen.keys("y", "Enter")
    screen.type_line('print("REGISTERED", ok)')
    screen.wait_for("REGISTERED True", timeout=30)


def files_hold(root: str, pattern: str, text: str) -> bool:
    return any(text in p.read_text(errors="replace") for p in Path(root).rglob(pattern) if p.is_file())


def codex_files_hold(text: str) -> bool:
    return files_hold(os.environ["CODEX_HOME"], "*.jsonl", text)


def claude_files_hold(text: str) -> bool:
    return files_hold(os.environ["CLAUDE_CONFIG_DIR"], "*.jsonl", text)


async def tool_results(stub: StubClient, name: str, needle: str, timeout: float = 60) -> str:
    """The text of the first tool result `name`'s client sent its model that contains `needle`."""
    with anyio.fail_after(timeout):
        while True:
            for r in await stub.requests(name, kind="main", body=False):
                if r.tool_result and needle in r.last_text:
                    return r.last_text
            await anyio.sleep(0.3)


def receipt_of(text: str) -> dict:
    """The JSON receipt inside a tool result's text: each client wraps an MCP result its own way
    (Codex: `{"type": "input_text", "text": "<the tool's JSON>"}, ...`), so decode layer by layer."""
    todo: list[object] = [text]
    while todo:
        item = todo.pop(0)
        if isinstance(item, dict):
            if "request" in item and "state" in item:
                return item
            todo += list(item.values())
        elif isinstance(item, list):
            todo += item
        elif isinstance(item, str):
            for candidate in (item, f"[{item}]", item[item.find("{"):item.rfind("}") + 1]):
                try:
                    todo.append(json.loads(candidate))
                    break
                except ValueError:
                    continue
    raise AssertionError(f"no receipt in {text!r}")


async def fresh_exchange(spec: str, s=None) -> None:
    """The operator starts a new exchange with `spec` (a hop-0 message): an agent's request carries its
    exchange's hop + 1, so the hops in these tests count from here whatever an earlier test sent it."""
    from relay_repl.session.core.gate import ScriptedGate
    from tests.support.sessions import live_session

    if s is None:
        async with live_session([True]) as (own, _gate, _inbox):
            return await fresh_exchange(spec, own)
    approve, s.approve = s.approve, ScriptedGate([True])
    try:
        d = await s.send(spec, "a new exchange starts here", want="none")
    finally:
        s.approve = approve
    assert d.outcome == "delivered", d.summary()
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(spec.partition(":")[2], timeout=90))


def proceeds(screen: Screen) -> int:
    return screen.text().count("Proceed? [y/N]")


async def ask_approve_answer(lab, asker: str, asker_spec: str, to: str, asker_holds, target_holds) -> None:
    async with StubClient(lab.stub.control) as stub:
        await fresh_exchange(asker_spec)
        screen = start_repl()
        try:
            register(screen)
            await stub.clear_requests(asker)
            helpers.wait_idle(asker, timeout=60)
            helpers.submit(asker, f"ask {to} via relay (want=reply): please compute 6*7")
            # the tool's answer, at once: held, never sent
            held = await tool_results(stub, asker, "held for the operator")
            rid = receipt_of(held)["request"]
            assert f"held for the operator's approval (request {rid})" in held
            text = screen.wait_for(f"request {rid} from {asker_spec} [verified]: send to {to}", timeout=30)
            assert "(want=reply, hop 1)" in text, "one past the operator's hop-0 message to the asker"
            assert not target_holds(f"{asker_spec} (verified) wrote: «please compute 6*7»"), "nothing is sent before the y"
            # the plan: the ordinary four parts, the asker named as the origin of the words; y then Enter
            n = proceeds(screen)
            screen.type_line(f"d = await session.approve_request({rid!r})")
            plan = screen.wait_for(lambda s: s.count("Proceed? [y/N]") > n, timeout=60)
            assert f"request {rid} from {asker_spec} [verified]: {asker_spec}'s words for {to}" in plan
            for part in ("1 target", "2 transport", "3 payload", "4 delivered"):
                assert part in plan
            assert f"{asker_spec} (verified) wrote: «please compute 6*7»" in plan, plan[-3000:]
            assert f"quote {asker_spec}'s words (verified), not yours" in plan.replace("\n", " ").replace("  ", " ")
            screen.keys("y", "Enter")
            # the receiver's answer, verified, then its own plan to the asker: a second y
            second = screen.wait_for(lambda s: s.count("Proceed? [y/N]") > n + 1, timeout=120)
            assert f"answer to request {rid} from {to} [verified]" in second
            assert f"re={rid}" in second
            screen.keys("y", "Enter")
            screen.type_line("print('STATE', d.state.value, session.request(%r).answer_state)" % rid)
            screen.wait_for(lambda s: re.search(r"STATE (in_turn|replied) (in_turn|delivered|replied)", s) is not None,
                            timeout=90)
            # the answer reached the asker: its own file holds re=<request id>
            assert await _eventually(lambda: asker_holds(f"re={rid}"))
            # the asker reads its request's steps: held -> approved -> delivered
            helpers.wait_idle(asker, timeout=90)
            helpers.submit(asker, f"status of relay request {rid}")
            got = receipt_of(await tool_results(stub, asker, 'history'))
            assert [h["state"] for h in got["history"]] == ["held", "approved", "delivered"], got
            assert got["request"] == rid and got["answer_id"]
            helpers.wait_idle(asker, timeout=90)
        finally:
            screen.close()


async def _eventually(check, timeout: float = 30) -> bool:
    with anyio.move_on_after(timeout):
        while not check():
            await anyio.sleep(0.3)
        return True
    return False


async def test_codex_beta_asks_claude_alpha_and_the_answer_reaches_beta(lab):
    await ask_approve_answer(lab, "beta", CODEX, CLAUDE, codex_files_hold, claude_files_hold)


async def test_claude_alpha_asks_codex_beta_and_the_answer_reaches_alpha(lab):
    await ask_approve_answer(lab, "alpha", CLAUDE, CODEX, claude_files_hold, codex_files_hold)


OUTSIDE = ("from relay_repl.session.core.outside import surely_outside_every_session as s; "
           "print(\"OUTSIDE\", s())")


async def test_relay_ask_from_an_agents_own_shell_is_held_and_its_status_read(lab):
    """`relay ask` run by the agent's shell tool (Claude's Bash, Codex's exec_command), no MCP: the
    caller is established from the shell's ancestry, the request held, its status readable by it."""
    import relay_repl.agents.codex.lab as codex_lab
    from relay_repl.lab.stubs.script import Rule, Step, ToolCall
    from tests.support.sessions import live_session

    relay = str(Path(sys.executable).parent / "relay")
    async with StubClient(lab.stub.control) as stub, live_session() as (s, gate, inbox):
        calls = {"alpha": lambda cmd: ToolCall(name="Bash", input={"command": cmd, "description": "ask relay"}),
                 "beta": lambda cmd: ToolCall(**codex_lab.shell_call(cmd).model_dump())}
        for name, to in (("alpha", CODEX), ("beta", CLAUDE)):
            await fresh_exchange(CLAUDE if name == "alpha" else CODEX, s)
            await stub.clear_requests(name)
            # first, each kind's cheap negative rule in the real client's shell: it must never exclude its session
            await stub.add_rule(name, Rule(match="SHELL-ASK", once=True, steps=[
                Step(tool=calls[name](f"{sys.executable} -c '{OUTSIDE}'; "
                                      f"{relay} ask {to} 'from the shell of {name}' --want none")),
                Step(text="asked")]))
            helpers.wait_idle(name, timeout=90)
            helpers.submit(name, "SHELL-ASK")
            out = await tool_results(stub, name, "held for the operator")
            assert "OUTSIDE False" in out, out
            rid = re.search(r"request ([\w.-]+-\d+)\)", out).group(1)
            req = s.request(rid)
            assert req.asker == (CLAUDE if name == "alpha" else CODEX) and req.verdict == "verified", req
            assert req.body == f"from the shell of {name}" and req.want == "none"
            await stub.clear_requests(name)
            await stub.add_rule(name, Rule(match="SHELL-STATUS", once=True, steps=[
                Step(tool=calls[name](f"{relay} ask --status {rid}")), Step(text="read")]))
            helpers.wait_idle(name, timeout=90)
            helpers.submit(name, "SHELL-STATUS")
            out = await tool_results(stub, name, f"request {rid} to")
            assert f"request {rid} to {to}: held; steps: held" in out
            s.deny_request(rid, why="test over")
            helpers.wait_idle(name, timeout=90)
        assert gate.shown == []
