"""Live, against the real clients in the lab: nothing reachable from the REPL's `session`
writes to a pane, a socket, the Codex queue or Claude's registry without the gate's
approval for that very plan (issue 16, case 6 and its Done-when line).

Two tests. The five calls an attacker made on the old main (each reached a lab receiver
with the gate never asked) are each refused now, through the public path and through the
private object behind it. Then a walk: every public attribute and method reachable from a
session built as the REPL builds it (session/app.py, with its inbox open), to depth 3, is
called with plausible arguments (targets resolved in the lab, deliveries, stage logs, the
lab's pane, a live approval minted for ANOTHER plan) under a gate that answers No. The
receivers are read before and after: no call leaves its tag in alpha's transcript, beta's
rollout or queue_1.sqlite, or a pane; the panes look as they did; Claude's registry
(`sessions/`) holds the same records.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.fidelity.tmux import calm as lab_calm
from relay_repl.core.approval import Approval
from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import NoApproval
from relay_repl.core.plan import Plan
from relay_repl.core.target import Target
from relay_repl.session.app import make_session
from relay_repl.session.core.gate import DenyGate
from relay_repl.store.ledger import Ledger
from relay_repl.transports.base import StageLog
from relay_repl.transports.tmux import PaneRef, TmuxProgress
from tests.support.approvals import approval_for
from tests.transports.test_halt_controls_live import quiet_screen

pytestmark = [pytest.mark.live, pytest.mark.anyio]
DEPTH = 3


# -- the receivers -------------------------------------------------------------------------------

def _texts(root: Path, pattern: str) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob(pattern) if p.is_file())


def queue_rows() -> list[tuple[Any, ...]]:
    """Every row of every table of Codex's queue file (read-only)."""
    path = Path(os.environ["CODEX_HOME"]) / "queue_1.sqlite"
    if not path.exists():
        return []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return sorted((t, *map(str, row)) for t in tables for row in con.execute(f'SELECT * FROM "{t}"'))
    finally:
        con.close()


def registry() -> dict[str, Any]:
    """Claude's registry as Claude and ListAgents read it: each record's identity."""
    out = {}
    for f in sorted((Path(os.environ["CLAUDE_CONFIG_DIR"]) / "sessions").iterdir()):
        try:
            rec = json.loads(f.read_text()) if f.suffix == ".json" else {}
        except ValueError:
            rec = {}
        out[f.name] = (rec.get("pid"), rec.get("name"), rec.get("messagingSocketPath"))
    return out


def reached(tag: str) -> list[str]:
    """Where the tag arrived: alpha's transcript, beta's rollouts, the queue, either pane."""
    where = []
    if tag in _texts(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects", "*.jsonl"):
        where.append("claude transcript")
    if tag in _texts(Path(os.environ["CODEX_HOME"]) / "sessions", "*.jsonl"):
        where.append("codex rollout")
    if any(tag in str(row) for row in queue_rows()):
        where.append("queue_1.sqlite")
    for name in ("alpha", "beta"):
        if tag in helpers.capture(name):
            where.append(f"pane {name}")
    return where


def unchanged(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Assert the receivers are as they were; a pane that differs is shown as a diff."""
    import difflib

    for key in before:
        if before[key] != after[key]:
            if isinstance(before[key], str):
                diff = "\n".join(difflib.unified_diff(before[key].splitlines(), after[key].splitlines(), lineterm=""))
                pytest.fail(f"{key} changed:\n{diff}")
            pytest.fail(f"{key} changed: {before[key]!r} -> {after[key]!r}")


def calm(name: str, screen: str) -> str:
    """The pane less what its client redraws on its own timer (its kind's `MARKS.own_redraws`: Claude's effort
    hint row, `◐ medium · /effort`) and blank rows."""
    return "\n".join(lab_calm(name, screen.splitlines()))


async def receivers() -> dict[str, Any]:
    return {"alpha": calm("alpha", await quiet_screen("alpha")), "beta": calm("beta", await quiet_screen("beta")),
            "queue": queue_rows(), "registry": registry()}


# -- the five calls of issue 16 case 6 --------------------------------------------------------------

async def test_the_five_attack_calls_are_refused_and_nothing_reaches_a_receiver(lab, tmp_path):
    gate = DenyGate()
    s = make_session(approve=gate, echo=lambda line: None, ledger=Ledger(tmp_path / "l.sqlite"))
    await s.refresh()
    alpha, beta = await s.target("claude:alpha"), await s.target("codex:beta")
    before = await receivers()
    tag = f"attack{uuid.uuid4().hex[:8]}"
    refused: list[str] = []

    def fresh(target: Target, transport: str) -> tuple[Delivery, StageLog]:
        d = Delivery(target=target.spec, transport=transport, relay_id=f"{tag}-1")
        return d, StageLog(d, s.ledger)

    async def attempt(what: str, call: Callable[[], Any]) -> None:
        try:
            result = call()
            if inspect.isawaitable(result):
                with anyio.fail_after(30):
                    await result
        except (NoApproval, AttributeError, TypeError) as exc:
            refused.append(f"{what}: {type(exc).__name__}: {str(exc)[:80]}")
            return
        pytest.fail(f"{what} was not refused")

    # 1. session.transports.codex_queue.send(...) as the raw transport took it
    d, log = fresh(beta, "codex-queue")
    await attempt("transports.codex_queue.send", lambda: s.transports.codex_queue.send(d, beta, tag, log))
    await attempt("the codex-queue object", lambda: s._transports["codex-queue"].send(d, beta, tag, log))
    # 2. session.transports.claude_code_socket.send(...)
    d, log = fresh(alpha, "claude-code-socket")
    await attempt("transports.claude_code_socket.send",
                  lambda: s.transports.claude_code_socket.send(d, alpha, tag, log))
    await attempt("the claude-code-socket object", lambda: s._transports["claude-code-socket"].send(d, alpha, tag, log))
    # 3. the pane I/O's send_literal(...) (and its keys)
    pane = PaneRef(socket_path=os.environ["RELAY_TMUX_SOCKET"], pane_id=alpha.pane or "")
    await attempt("transports.tmux.io.send_literal", lambda: s.transports.tmux.io.send_literal(pane, tag))
    io = s._transports["tmux"].io
    await attempt("the pane I/O's send_literal", lambda: io.send_literal(pane, tag))
    await attempt("the pane I/O's send_key", lambda: io.send_key(pane, "Enter"))
    # 4. TmuxTransport.submit_staged(...) on a delivery naming alpha's pane
    d, log = fresh(alpha, "tmux")
    TmuxProgress(pane_ref=pane).save(d)
    await attempt("transports.tmux.submit_staged", lambda: s.transports.tmux.submit_staged(d, alpha, tag, log))
    await attempt("the tmux object's submit_staged", lambda: s._transports["tmux"].submit_staged(d, alpha, tag, log))
    # 5. session.run_armed(...) around a raw send
    d, log = fresh(beta, "codex-queue")
    raw = s._transports["codex-queue"]
    await attempt("session.run_armed", lambda: s.run_armed(d, log, lambda: raw.send(d, beta, tag, log)))
    await attempt("session._run_armed", lambda: s._run_armed(d, log, None, lambda a: raw.send(d, beta, tag, log,
                                                                                             approval=a)))
    # and with a live approval minted by the gate for another plan
    other = await approval_for("codex-queue", beta, tag + " other plan")
    await attempt("another plan's approval", lambda: raw.send(d, beta, tag, log, approval=other))

    assert len(refused) == 12, refused
    assert gate.shown == [], "none of these may even reach the gate"
    # the composable path plans and asks, like session.send: No sends nothing
    d = await s.transports.codex_queue.send("codex:beta", tag)
    d2 = await (s.transports.claude_code_socket | s.transports.tmux).send("claude:alpha", tag)
    assert [p.transport for p in gate.shown] == ["codex-queue", "claude-code-socket"]
    assert {d.state.value, d2.state.value} == {"withheld"}
    await anyio.sleep(1.0)  # a queued row or typed text would show within a second
    assert reached(tag) == []
    unchanged(before, await receivers())


# -- the walk -------------------------------------------------------------------------------------

_LEAVES = (str, bytes, int, float, bool, type(None), type, type(os))


def walk(root: Any) -> list[tuple[str, ...]]:
    """Paths (attribute names from `session`) of every public callable to DEPTH."""
    found: list[tuple[str, ...]] = []
    seen: set[int] = set()
    todo: list[tuple[tuple[str, ...], Any]] = [((), root)]
    while todo:
        path, obj = todo.pop(0)
        if id(obj) in seen or len(path) >= DEPTH:
            continue
        seen.add(id(obj))
        for name in dir(obj):
            if name.startswith("_"):
                continue
            try:
                value = getattr(obj, name)
            except Exception:
                continue
            if callable(value) and not isinstance(value, type):
                found.append((*path, name))
            if not isinstance(value, _LEAVES) and not inspect.ismodule(value):
                todo.append(((*path, name), value))
    return found


class Args:
    """Plausible arguments by parameter name and annotation, aimed at one lab target."""

    def __init__(self, s: Any, target: Target, other: Approval, tag: str, tmp: Path) -> None:
        self.s, self.target, self.other, self.tag, self.tmp = s, target, other, tag, tmp

    def value(self, p: inspect.Parameter) -> Any:
        name, ann = p.name.lower(), str(p.annotation)
        d = Delivery(target=self.target.spec, transport=self.target.transports[0] if self.target.transports else "tmux",
                     relay_id=f"{self.tag}-1")
        pane = PaneRef(socket_path=os.environ["RELAY_TMUX_SOCKET"], pane_id=self.target.pane or "%0")
        TmuxProgress(pane_ref=pane).save(d)
        table: dict[str, Any] = {
            "approval": self.other, "target": self.target, "spec": self.target.spec, "delivery": d, "d": d,
            "ref": d, "log": StageLog(d, self.s.ledger), "pane": pane, "key": "Enter", "text": self.tag,
            "body": self.tag, "line": self.tag, "payload": self.tag, "message": 1, "timeout": 0.5,
            "recheck": 0.2, "transport": None, "path": self.tmp / f"{self.tag}.sock", "name": self.tag,
            "relay_id": f"{self.tag}-1", "run_id": self.tag, "recipe": "ping", "reason": self.tag,
            "origin": {"kind": "peer"}, "plan": Plan(action="x", target=self.target.describe(), identified_by="walk",
                                                      transport="tmux", payload=self.tag, delivered_when="never"),
            "step": lambda *a: self.s._transports["tmux"].send(d, self.target, self.tag, StageLog(d, self.s.ledger),
                                                                 approval=self.other),
        }
        if name in table:
            return table[name]
        for hint, v in (("Target", self.target), ("Delivery", d), ("StageLog", table["log"]), ("PaneRef", pane),
                        ("Approval", self.other), ("Plan", table["plan"]), ("Path", table["path"]), ("float", 0.5),
                        ("int", 1), ("bool", False), ("dict", {}), ("list", []), ("Callable", table["step"])):
            if hint in ann:
                return v
        return self.tag

    def call(self, fn: Callable[..., Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return (self.tag,), {}
        args: list[Any] = []
        kw: dict[str, Any] = {}
        for p in sig.parameters.values():
            if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
                continue
            if p.default is not p.empty and p.name not in ("approval", "timeout", "recheck", "path"):
                continue
            if p.kind is p.KEYWORD_ONLY:
                kw[p.name] = self.value(p)
            else:
                args.append(self.value(p))
        return tuple(args), kw


async def test_nothing_reachable_from_session_writes_without_the_gates_approval(lab, tmp_path, monkeypatch):
    """Issue 16 Done-when: a walk of every public attribute and method reachable from `session`."""
    monkeypatch.chdir(tmp_path)  # a Path method called with a relative name writes here, not in the repository
    targets: dict[str, Target] = {}
    base = make_session(approve=DenyGate(), echo=lambda line: None, ledger=Ledger(tmp_path / "l.sqlite"))
    await base.refresh()
    for spec in ("claude:alpha", "codex:beta"):
        targets[spec] = await base.target(spec)
    before = await receivers()
    outcomes: dict[str, int] = {}
    shown: list[Plan] = []
    run = uuid.uuid4().hex[:6]
    calls: dict[str, str] = {}
    n = 0
    async with anyio.create_task_group() as tg:
        async def fresh() -> Any:
            """A session as the REPL builds it (app.make_session, inbox open), discovery reused, and a
            ledger of its own (a call may halt it, close it or overwrite its file)."""
            gate = DenyGate()
            s = make_session(approve=gate, echo=lambda line: None, ledger=Ledger(tmp_path / f"l{uuid.uuid4().hex}.sqlite"))
            s._targets, s._refreshed = list(base._targets), True
            inbox = await s.open_inbox(tg, echo=lambda line: None)
            return s, gate, inbox

        s, _, inbox = await fresh()
        paths = walk(s)
        await inbox.close()
        assert len(paths) > 150, len(paths)
        for path in paths:
            for spec, target in targets.items():
                n += 1
                tag = f"walk{run}x{n}"
                s, gate, inbox = await fresh()
                other = await approval_for("tmux", target, tag + " another plan", relay_id=f"{tag}-9")
                obj: Any = s
                try:
                    for name in path:
                        obj = getattr(obj, name)
                    args, kw = Args(s, target, other, tag, tmp_path).call(obj)
                    with anyio.fail_after(30):
                        result = obj(*args, **kw)
                        if inspect.isawaitable(result):
                            await result
                    outcome = "returned"
                except Exception as exc:  # a refusal, a usage error: anything but a write
                    outcome = type(exc).__name__
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                calls[tag] = f"{'.'.join(path)} ({spec}): {outcome}"
                shown += gate.shown
                await inbox.close()  # the one it opened (a call may have attached something else)
                with contextlib.suppress(Exception):
                    s.ledger.close()
        tg.cancel_scope.cancel()
    await anyio.sleep(1.0)  # a queued row or typed text would show within a second
    hits = reached(f"walk{run}x")
    if hits:  # name the calls that got through
        import re

        found = set(re.findall(f"walk{run}x\\d+", _texts(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects", "*.jsonl")
                               + _texts(Path(os.environ["CODEX_HOME"]) / "sessions", "*.jsonl") + str(queue_rows())
                               + helpers.capture("alpha") + helpers.capture("beta")))
        pytest.fail(f"reached {hits}: " + "; ".join(calls.get(t, t) for t in sorted(found)))
    assert outcomes.get("NoApproval", 0) > 0, outcomes  # the raw primitives behind handles did refuse
    # the handles' sends and the session's own reached the gate (and its No) for each kind of transport
    assert {"tmux", "codex-queue", "claude-code-socket"} <= {getattr(p, "transport", None) for p in shown}, outcomes
    unchanged(before, await receivers())
