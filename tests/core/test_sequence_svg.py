"""The picture of an exchange (`relay log --diagram`): a five-round run over the in-memory
transport with fake repliers, drawn as SVG; checked as XML, and rendered by headless Chromium
with its lifelines and arrows counted from the screenshot's pixels."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from relay_repl.core.exchange import OPERATOR, Exchange, Message
from relay_repl.core.sequence_svg import ARROW_COLOURS, LIFELINE, render_svg
from relay_repl.store.exchange import read_exchange
from tests.session.test_runner import TWO, mk, write
from tests.support.browser import chromium, screenshot
from tests.support.png import horizontal_lines, read_png, vertical_lines

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script>\u202eevil\u202c &</text>"


async def five_rounds(tmp_path, answer=None):
    kw = {"answer": answer} if answer else {}
    s, rep, gate, led, lines = mk(tmp_path, [True] * 10, **kw)
    run = await s.run(write(tmp_path, TWO.format(rounds=5)))
    assert run.state == "done", run
    return run, led


def counts(svg: str) -> tuple[int, int, ET.Element]:
    root = ET.fromstring(svg.encode())
    lifelines = root.findall(f".//{SVG}g[@class='lifeline']")
    arrows = [g for g in root.iter(f"{SVG}g") if (g.get("class") or "").startswith("message ")]
    return len(lifelines), len(arrows), root


@pytest.mark.anyio
async def test_a_five_round_run_has_three_lifelines_and_one_arrow_per_message(tmp_path):
    run, led = await five_rounds(tmp_path)
    ex = read_exchange(led, run.id)
    assert ex.lifelines == [OPERATOR, "fake:a", "fake:b"]
    sends = [m for m in ex.messages if m.kind == "send"]
    replies = [m for m in ex.messages if m.kind == "reply"]
    assert len(sends) == 10 and len(replies) == 10
    assert [m.hop for m in sends] == [0, 2] * 5 and [m.hop for m in replies] == [1, 3] * 5
    assert {m.verdict for m in replies} == {"verified"} and all(m.state.startswith("re ") for m in replies)
    assert [s.relay_id for s in sends] == [st.relay_id for st in run.steps]
    n_lines, n_arrows, root = counts(render_svg(ex))
    assert (n_lines, n_arrows) == (3, 20)
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    for step in run.steps:  # each arrow names its relay id, hop and state; each answer its verdict
        assert f"{step.relay_id} · hop {step.hop} · replied" in texts
        assert f"{step.answer.relay_id} · hop {step.answer.hop} · re {step.relay_id} · verified" in texts


@pytest.mark.anyio
async def test_a_hostile_reply_is_neutralised_and_escaped(tmp_path):
    run, led = await five_rounds(tmp_path, answer=lambda env, t: HOSTILE if t.name == "b" else f"ok {env.id}")
    ex = read_exchange(led, run.id)
    assert any(HOSTILE in m.text for m in ex.messages)  # kept as recorded; the drawing neutralises it
    svg = render_svg(ex)
    assert "\u202e" not in svg and "\u202c" not in svg
    assert "⟨U+202E⟩evil⟨U+202C⟩" in svg
    assert "<script" not in svg and "&lt;script&gt;" in svg and "&lt;/text&gt;" in svg
    n_lines, n_arrows, root = counts(svg)
    assert (n_lines, n_arrows) == (3, 20)
    assert not list(root.iter(f"{SVG}script")) and not list(root.iter("script"))


def test_refusals_and_halts_are_marked(tmp_path):
    from relay_repl.core.exchange import Mark

    ex = Exchange(ref="r", title="t", lifelines=[OPERATOR, "x:y"], messages=[
        Message(kind="refused", sender=OPERATOR, receiver="x:y", relay_id="me-1", hop=0, state="withheld",
                reason="the operator answered No", at=1),
        Message(kind="send", sender=OPERATOR, receiver="x:y", relay_id="me-2", hop=0, state="halted", at=2)],
        marks=[Mark(kind="halt", text="relay-halt: enough (by x)", at=3)])
    svg = render_svg(ex)
    _, n_arrows, root = counts(svg)
    assert n_arrows == 2
    assert "✕ me-1 · hop 0 · withheld" in svg and "the operator answered No" in svg and "✕ me-2" in svg
    assert root.findall(f".//{SVG}g[@class='mark halt']") and "relay-halt: enough" in svg


@pytest.mark.anyio
@pytest.mark.skipif(chromium() is None, reason="chromium missing: ./scripts/bootstrap installs it (as root)")
async def test_the_svg_renders_in_headless_chromium_with_its_lifelines_and_arrows(tmp_path):
    run, led = await five_rounds(tmp_path, answer=lambda env, t: HOSTILE if t.name == "b" else f"ok {env.id}")
    svg = render_svg(read_exchange(led, run.id))
    page = tmp_path / "run.svg"
    page.write_text(svg, encoding="utf-8")
    root = ET.fromstring(svg.encode())
    w, h = int(root.get("width")), int(root.get("height"))
    png = tmp_path / "shot.png"
    screenshot(page, png, w, h)
    img = read_png(png)
    assert (img.width, img.height) == (w, h)
    assert vertical_lines(img, LIFELINE) == 3
    assert horizontal_lines(img, list(ARROW_COLOURS), min_run=150) == 20
