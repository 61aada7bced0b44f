"""The notebook runner over the in-memory transport with a fake replier: one namespace,
top-level await, headed plans through the session's gate, outputs beside the file, a
raising cell stops the run, dry run sends nothing, resume answers sends from the ledger."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import anyio
import pytest

from relay_repl.core.notebook_cells import NotebookError
from relay_repl.session.runs.notebook import load_run, run_notebook
from tests.session.test_runner import mk

pytestmark = pytest.mark.anyio

NB = '''# %% [markdown]
# # Ask two

# %% tags=["parameters"]
who = "fake:a"
rounds = 1

# %% ask
d = await session.send(who, f"round {rounds}: status?", want="reply")
r = await d.wait_reply(5)
print("got", r.body)

# %% both
async def ask(t):
    return await session.send(t, "and you?", want="reply")
ds = [await ask(t) for t in ("fake:a", "fake:b")]
[(await x.wait_reply(5)).body for x in ds]

# %% gate check
import os
assert os.path.exists(os.environ["NB_FLAG"]), "flag missing"
"done"
'''


def write(tmp_path, text=NB, name="ask2"):
    p = tmp_path / f"{name}.py"
    p.write_text(text)
    return p


@pytest.fixture
def flag(tmp_path, monkeypatch):
    f = tmp_path / "flag"
    monkeypatch.setenv("NB_FLAG", str(f))
    return f


async def test_cells_share_one_namespace_with_top_level_await_and_outputs_land_beside_the_file(tmp_path, flag):
    flag.touch()
    s, rep, gate, led, lines = mk(tmp_path, [True] * 3)
    path = write(tmp_path)
    run = await run_notebook(s, path, {"rounds": "2"})
    assert run.state == "done" and run.exit_code == 0, run.reason
    assert [p.heading for p in gate.shown] == [f'notebook ask2, run {run.id}, cell 4 "ask"'] + \
        [f'notebook ask2, run {run.id}, cell 5 "both"'] * 2
    assert "round 2: status?" in gate.shown[0].payload  # the -p value, typed and injected after the defaults
    where = tmp_path / "ask2.relay" / run.id
    cells = [json.loads(x) for x in (where / "cells.jsonl").read_text().splitlines()]
    by = {c["index"]: c for c in cells}
    assert by[3]["title"] == "injected-parameters" and by[3]["parameters"] == {"rounds": 2}
    assert by[4]["stdout"].startswith("got a heard: round 2: status?")
    assert [(p["answer"], p["target"]) for p in by[4]["plans"]] == [("approved", "fake:a")]
    (dl,) = by[4]["deliveries"]
    assert dl["state"] == "replied" and dl["verdict"] == "verified" and dl["reply"].startswith("a heard")
    assert by[5]["result"] == "['a heard: and you?', 'b heard: and you?']"
    assert len(by[5]["deliveries"]) == 2 and len(by[4]["sha256"]) == 64
    report = (where / "report.md").read_text()
    assert '## cell 5 "both": done' in report and "| fake:b | replied | verified | b heard: and you? |" in report
    # the exchange drawn beside the report and embedded in it: operator, fake:a, fake:b; 3 sends, 3 answers
    assert "![sequence diagram of the exchange](exchange.svg)" in report
    svg = ET.parse(where / "exchange.svg").getroot()
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}g[@class='lifeline']")) == 3
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}g[@class='message send']")) == 3
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}g[@class='message reply']")) == 3
    assert path.read_text() == NB  # never written into
    assert load_run(path)[0].id == run.id


async def test_a_raising_cell_stops_the_run_and_the_report_shows_the_error_under_it(tmp_path, flag):
    s, rep, gate, led, lines = mk(tmp_path, [True] * 3)
    text = NB + '\n# %% never\nprint("not reached")\n'
    run = await run_notebook(s, write(tmp_path, text), {})
    assert run.state == "error" and run.exit_code == 1
    assert [c.state for c in run.cells if c.kind == "code"] == ["done", "done", "done", "error", "not run"]
    report = (tmp_path / "ask2.relay" / run.id / "report.md").read_text()
    err = report.split('## cell 5 "gate check": error', 1)[1]
    assert "AssertionError: flag missing" in err and "ask2.py\", line 21" in err
    assert '## cell 6 "never": not run' in report and "not reached\n```" not in report


async def test_a_declined_plan_is_recorded_and_nothing_is_sent(tmp_path, flag):
    s, rep, gate, led, lines = mk(tmp_path, [False])
    run = await run_notebook(s, write(tmp_path), {})
    assert run.state == "error"  # d.wait_reply on a withheld delivery raises: no answer can come
    assert rep.received == []
    assert run.cells[2].plans[0].answer == "declined" and run.cells[2].deliveries[0].state == "withheld"


async def test_dry_run_shows_every_plan_sends_nothing_and_writes_nothing_to_the_ledger(tmp_path, flag):
    flag.touch()
    s, rep, gate, led, lines = mk(tmp_path, [])
    before = led.events()
    run = await run_notebook(s, write(tmp_path, NB.replace("r.body", "r")), {}, dry_run=True)
    assert run.state == "error"  # cell "both" does (await x.wait_reply(5)).body, and a dry wait returns None
    assert rep.received == [] and gate.shown == [] and led.events() == before
    c = run.cells[2]
    assert c.stdout == "got None\n" and c.plans[0].answer == "dry run" and c.deliveries[0].state == "withheld"
    report = (tmp_path / "ask2.relay" / run.id / "report.md").read_text()
    assert "**Dry run**" in report


async def test_bad_parameters_stop_before_any_cell(tmp_path, flag):
    s, rep, gate, led, lines = mk(tmp_path, [True] * 3)
    path = write(tmp_path)
    for params, needle in (({"colour": "red"}, "no parameter colour"), ({"rounds": "x"}, "rounds is an int"),
                           ({"who": "fake:nobody"}, "no target fake:nobody")):
        with pytest.raises(NotebookError, match=needle):
            await run_notebook(s, path, params)
    assert not (tmp_path / "ask2.relay").exists() and gate.shown == []


async def test_resume_answers_the_sends_from_the_ledger_and_a_changed_cell_stops_it(tmp_path, flag):
    s, rep, gate, led, lines = mk(tmp_path, [True] * 6)
    path = write(tmp_path)
    first = await run_notebook(s, path, {})
    assert first.state == "error" and len(rep.received) == 3
    flag.touch()
    s2, rep2, gate2, _, _ = mk(tmp_path, [True] * 6, led=led)
    again = await run_notebook(s2, path, {}, resume=first.id)
    assert again.state == "done", again.reason
    assert rep2.received == [] and gate2.shown == []  # every send answered from the ledger: none sent twice
    assert again.cells[2].stdout.endswith("got a heard: round 1: status?\n")
    assert [d.replayed for d in again.cells[3].deliveries] == [True, True]
    assert again.cells[3].result == "['a heard: and you?', 'b heard: and you?']"
    # a stopped run whose sending cell was edited: one line naming the cell, nothing sent
    flag.unlink()
    third = await run_notebook(s2, path, {})
    assert third.state == "error"
    path.write_text(NB.replace('"and you?"', '"and you, again?"'))
    flag.touch()
    s3, rep3, gate3, _, _ = mk(tmp_path, [True] * 6, led=led)
    stopped = await run_notebook(s3, path, {}, resume=third.id)
    assert stopped.state == "stopped" and 'cell 4 "both" changed since run' in (stopped.reason or "")
    assert rep3.received == [] and gate3.shown == []


async def test_cancelling_a_waiting_cell_keeps_its_output_and_leaves_the_run_resumable(tmp_path, flag):
    async with anyio.create_task_group() as tg:
        s, rep, gate, led, lines = mk(tmp_path, [True] * 6, tg=tg, delay=30)
        path = write(tmp_path, NB.replace("wait_reply(5)", "wait_reply(60)"))
        with anyio.move_on_after(1.0):
            await run_notebook(s, path, {})
        tg.cancel_scope.cancel()
    (run_dir,) = (tmp_path / "ask2.relay").iterdir()
    run, _ = load_run(path)
    assert run.state == "interrupted" and run.cells[2].state == "interrupted"
    assert len(rep.received) == 1


async def test_session_notebook_runs_one_from_the_repl_with_the_same_gate(tmp_path, flag):
    flag.touch()
    s, rep, gate, led, lines = mk(tmp_path, [True] * 3)
    run = await s.notebook(str(write(tmp_path)), rounds=3)
    assert run.state == "done" and run.params == {"rounds": 3}
    assert len(gate.shown) == 3 and "round 3: status?" in gate.shown[0].payload
    assert s.send.__func__ is type(s).send  # the run's own send is gone once it ends  # type: ignore[attr-defined]


async def test_a_new_run_plans_as_usual_and_says_the_same_cell_sent_this_before(tmp_path, flag):
    flag.touch()
    s, rep, gate, led, lines = mk(tmp_path, [True] * 6)
    path = write(tmp_path)
    first = await run_notebook(s, path, {})
    s2, rep2, gate2, _, _ = mk(tmp_path, [True] * 6, led=led)
    await run_notebook(s2, path, {})
    assert len(rep2.received) == 3  # sent again: a new run is not a resume
    first_id = first.cells[2].deliveries[0].relay_id
    (note,) = [n for n in gate2.shown[0].notes if n.startswith("sent before")]
    assert f"sent before from this cell: {first_id} (run {first.id}, " in note and note.endswith(", replied")
    assert not any(n.startswith("sent before") for n in gate.shown[0].notes)


async def test_dry_run_never_asks_the_gate_for_any_side_effect(tmp_path, flag):
    s, rep, gate, led, lines = mk(tmp_path, [True] * 3)
    nb = ('# %% forward\nd = await session.forward("fake:a", "[relay/1 from=agent:x@peer to=peer id=peer-1 hop=0 '
          'want=none] hi")\nd.state.value\n')
    run = await run_notebook(s, write(tmp_path, nb, name="fwd"), {}, dry_run=True)
    assert gate.shown == [] and rep.received == []
    assert run.cells[0].plans[0].answer == "dry run" and run.cells[0].result == "'withheld'"


async def test_a_reply_that_comes_while_a_later_cell_waits_is_the_final_state_under_the_sending_cell(tmp_path, flag):
    async with anyio.create_task_group() as tg:
        s, rep, gate, led, lines = mk(tmp_path, [True], tg=tg, delay=0.3)
        nb = ('# %% send\nd = await session.send("fake:a", "later", want="reply")\nd.state.value\n\n'
              '# %% wait\nawait d.wait_reply(5)\nprint(d.state.value)\n')
        run = await run_notebook(s, write(tmp_path, nb, name="late"), {})
        tg.cancel_scope.cancel()
    assert run.state == "done" and run.cells[0].result == "'in_turn'" and run.cells[1].stdout == "replied\n"
    assert run.cells[0].deliveries[0].state == "replied" and run.cells[0].deliveries[0].verdict == "verified"
    (line, _) = (tmp_path / "late.relay" / run.id / "cells.jsonl").read_text().splitlines()
    assert json.loads(line)["deliveries"][0]["reply"].startswith("a heard: later")
    assert "| fake:a | replied | verified | a heard: later |" in (tmp_path / "late.relay" / run.id / "report.md").read_text()


async def test_a_long_cell_shows_which_cell_runs_and_for_how_long(tmp_path, flag, monkeypatch):
    import relay_repl.session.runs.notebook as notebook

    monkeypatch.setattr(notebook, "PROGRESS_FIRST", 0.2)
    s, rep, gate, led, lines = mk(tmp_path, [])
    said: list[str] = []
    run = await run_notebook(s, write(tmp_path, "# %% slow\nawait anyio.sleep(1.5)\n", name="slow"), {},
                             progress=said.append)
    assert run.state == "done"
    assert len(said) == 1 and said[0].startswith(f'  … notebook slow, run {run.id}, cell 1 "slow": running for ')


async def test_the_report_shows_escapes_visibly_and_never_passes_them_on(tmp_path, flag):
    """Whatever a cell printed (a peer's words, say) reaches `relay notebook show` through the one
    neutraliser; the record itself keeps the exact text (JSON escapes it)."""
    s, rep, gate, led, lines = mk(tmp_path, [])
    nb = '# %% echo\ntext = "ok " + chr(27) + "[2J" + chr(0x202E) + "gnp.exe"\nprint(text)\ntext\n'
    run = await run_notebook(s, write(tmp_path, nb, name="esc"), {})
    report = (tmp_path / "esc.relay" / run.id / "report.md").read_text()
    assert "\x1b" not in report and "\u202e" not in report
    assert "```text\nok \\x1b[2J⟨U+202E⟩gnp.exe\n```" in report
    assert "```text\n'ok \\x1b[2J\\u202egnp.exe'\n```" in report  # the repr escapes itself
    assert run.cells[0].stdout == "ok \x1b[2J\u202egnp.exe\n"


@pytest.mark.parametrize("answer", [True, False])
async def test_the_shipped_keep_answer_notebook_writes_only_after_its_own_plans_y(tmp_path, answer):
    """recipes/keep-answer.py (issue 39): the send is relay's plan, appending the answer to a file is the
    operator's own action behind `session.confirm`: its plan names the file and the exact line; an n
    stops the run with nothing written."""
    from relay_repl.session.runs.recipes import shipped_dir

    s, rep, gate, led, lines = mk(tmp_path, [True, answer])
    out = tmp_path / "kept.md"
    run = await run_notebook(s, shipped_dir() / "keep-answer.py", {"target": "fake:a", "path": str(out),
                                                                    "question": "status?", "timeout": "5"})
    own = gate.shown[1]
    assert own.action == "append fake:a's answer to kept.md" and own.transport.startswith("your code: append")
    assert own.payload.startswith("- fake:a (verified, ") and own.payload.endswith(": a heard: status?\n")
    assert own.files == (f"{out} (appended to; created if missing)",)
    if answer:
        assert run.state == "done", run.reason
        assert out.read_text() == own.payload
    else:
        assert run.state == "error" and not out.exists()
        assert "declined: append fake:a's answer to kept.md was not done" in run.cells[-1].error


def test_a_peers_reply_cannot_close_the_reports_code_block_or_render_as_markdown():
    """A cell printing a peer's reply that holds a ``` line closed the report's three-backtick fence:
    the lines after it (an image fetched when the report is viewed, a forged heading) were the
    report's own markdown; in the deliveries table a reply `![x](http://...)` rendered as an image
    (old code fails both)."""
    from relay_repl.session.runs.notebook import CellRecord, NotebookRun, SendRecord, render_report

    evil = "fine\n```\n![pixel](http://evil.example/p.png)\n## cell 9: done\n```text"
    run = NotebookRun(id="r1", notebook="nb", path="nb.py", state="done", cells=[CellRecord(
        index=1, kind="code", title="", sha256="0", source="print(reply)", state="done", stdout=evil, result=evil,
        deliveries=[SendRecord(relay_id="op-1", target="codex:beta", transport="memory", state="replied",
                               outcome="replied", reply="![pixel](http://evil.example/p.png)")])])
    report = render_report(run)
    lines = report.splitlines()
    opened = [i for i, line in enumerate(lines) if line.startswith("````text")]
    assert len(opened) == 2, report  # a fence longer than any backtick run inside
    for i in opened:
        close = lines.index("````", i + 1)
        assert any("![pixel]" in line for line in lines[i:close]), report
    assert "| !\\[pixel](http://evil.example/p.png) |" in report, report
