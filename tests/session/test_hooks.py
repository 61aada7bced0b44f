"""A run adds to the session's send path through hooks, never by patching it (issue 35).

The notebook runner used to replace `session.send` and `session.approve` and swap `sys.stdout`
for a run, the recipe runner and an agent's request `approve`: now each installs `RunHooks`
with `session.running(...)`. The scan below fails on any assignment of a session method or
the approver on a session-like object, and on any replacement of `sys.stdout`/`sys.stderr`,
anywhere in the package (tests may still patch what they test)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import relay_repl
from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.core.hooks import RunHooks
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target

PACKAGE = Path(relay_repl.__file__).parent
SESSION_METHODS = {n for n, v in vars(Session).items() if inspect.isfunction(v) and not n.startswith("__")} | {"approve"}
SESSIONISH = re.compile(r"(^|\.)(_?session|sess|s|_?shared)$")
"""The objects a method assignment would patch: a session (however named) or its shared state."""
STREAMS = {"stdout", "stderr", "stdin"}


def patches(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each patch of a session method or a standard stream in one module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in (
                    SESSION_METHODS | STREAMS):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in ("redirect_stdout", "redirect_stderr"):  # an assignment to sys.stdout in disguise
                found.append((node.lineno, name))
        flat: list[ast.expr] = []
        for t in targets:
            flat += list(t.elts) if isinstance(t, (ast.Tuple, ast.List)) else [t]
        for t in flat:
            if not isinstance(t, ast.Attribute):
                continue
            owner = ast.unparse(t.value)
            if owner == "sys" and t.attr in STREAMS:
                found.append((t.lineno, ast.unparse(t)))
            elif t.attr in SESSION_METHODS and SESSIONISH.search(owner):
                found.append((t.lineno, ast.unparse(t)))
    return found


KNOWN: set[tuple[str, str]] = set()
"""None left: `relay watch`'s decision (session/core/watch_view.py) printed past the REPL's patched stdout with
`redirect_stdout`; its gate and echo now reach the terminal through the deciding session's hooks."""


def test_no_module_of_the_package_patches_a_session_method_or_a_standard_stream():
    found = [(str(p.relative_to(PACKAGE.parent)), line, what) for p in sorted(PACKAGE.rglob("*.py"))
             for line, what in patches(ast.parse(p.read_text(encoding="utf-8")))]
    assert [f"{path}:{line}: {what}" for path, line, what in found if (path, what) not in KNOWN] == []
    assert len([f for f in found if (f[0], f[2]) in KNOWN]) <= len(KNOWN)  # one use each, no second beside it


def test_the_scan_finds_each_shape_of_patch():
    old = """
self.session.approve = self._approve(original_approve)
self.session.send = self._send
del self.session.send
self.shared.approve = approve
s.reply, x = f, 1
sys.stdout = self.tee
setattr(session, "forward", f)
with contextlib.redirect_stdout(buf):
    pass
"""
    assert [line for line, _ in patches(ast.parse(old))] == [2, 3, 4, 5, 6, 7, 8, 9]
    fine = "d.reply = msg\nrow.target = t\nself.approve = a\nsession.echo = print\nprint(1, file=sys.stdout)\n"
    assert patches(ast.parse(fine)) == []


pytestmark = pytest.mark.anyio


class Heading(RunHooks):
    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    def approver(self, approve):
        async def headed(plan):
            self.seen.append(f"{self.name} asked")
            return await approve(plan.model_copy(update={"heading": f"{self.name}: {plan.heading or ''}"}))

        return headed

    async def send(self, req, proceed):
        self.seen.append(f"{self.name} send")
        return await proceed(req.model_copy(update={"body": f"{req.body} [{self.name}]"}))


def mk(tmp_path, answers):
    gate = ScriptedGate(answers)
    mem = InMemoryTransport()
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=gate, me=Me(address="me"),
                providers=[StaticProvider("fake", [fake_target()])], transports=[mem])
    return s, mem, gate


async def test_hooks_nest_newest_first_and_leave_with_their_block(tmp_path):
    s, mem, gate = mk(tmp_path, [True, True])
    seen: list[str] = []
    with s.running(Heading("outer", seen)), s.running(Heading("inner", seen)):
        await s.send("fake:inbox", "hi")
    assert seen == ["inner send", "outer send", "inner asked", "outer asked"]
    assert gate.shown[0].heading == "outer: inner: " and mem.received[0].endswith("hi [inner] [outer]")
    with pytest.raises(RuntimeError), s.running(Heading("gone", seen)):
        raise RuntimeError("the run failed")
    seen.clear()
    await s.send("fake:inbox", "plain")
    assert seen == [] and mem.received[1].endswith("] plain") and s.approve is gate


NB = '''# %% ask
d = await session.send("fake:a", "status?", want="reply")
r = await d.wait_reply(5)
print("got", r.body)
'''


@pytest.mark.parametrize("echo_to_stdout", [True, False])
async def test_a_notebook_keeps_what_its_cell_showed_and_leaves_the_session_as_it_found_it(tmp_path, capsys,
                                                                                          echo_to_stdout):
    from relay_repl.session.runs.notebook import run_notebook
    from tests.session.test_runner import mk as mk_replying

    s, rep, gate, led, lines = mk_replying(tmp_path, [True])
    if echo_to_stdout:
        s.echo = print  # the REPL's and the CLI's: progress shown beside the cell's prints, so kept with them
    approve_before = s.approve
    p = tmp_path / "nb.py"
    p.write_text(NB)
    run = await run_notebook(s, str(p), {})
    out = run.cells[0].stdout
    assert run.state == "done" and out.endswith("got a heard: status?\n")
    assert ("[confirm] in_turn" in out) is echo_to_stdout
    assert "got a heard: status?\n" in capsys.readouterr().out  # the terminal still shows the cell's print
    assert not s.shared.hooks and "send" not in vars(s) and s.approve is approve_before


async def test_relay_watchs_decision_prints_the_gates_plan_and_the_sessions_lines_through_its_hooks(tmp_path, capsys):
    """`relay watch` decides a request with the terminal itself as output (session/core/watch_view.py `ToTerminal`):
    the gate's plan and its answer line and the session's progress lines reach it, nothing goes to sys.stdout,
    and the session's own gate and echo are back as they were once the block ends."""
    import io

    from relay_repl.session.core.gate import TerminalGate
    from relay_repl.session.core.watch_view import ToTerminal

    mem = InMemoryTransport()
    gate = TerminalGate(isatty=lambda: False)  # no terminal: it prints the plan, then answers No
    echoed: list[str] = []
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=gate, me=Me(address="me"),
                providers=[StaticProvider("fake", [fake_target()])], transports=[mem], echo=echoed.append)
    real = io.StringIO()
    with s.running(ToTerminal(real)):
        d = await s.send("fake:inbox", "through the view")
        s.shared.say("a progress line")
    shown = real.getvalue()
    assert "Plan: send to fake:inbox" in shown and "through the view" in shown and "No terminal to ask on" in shown
    assert d.state.value == "withheld" and mem.received == [] and "a progress line" in shown
    assert capsys.readouterr().out == "" and echoed == [], "nothing past the hooks"
    await s.send("fake:inbox", "after the view")
    assert "after the view" in capsys.readouterr().out and s.approve is gate
