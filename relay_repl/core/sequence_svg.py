"""An exchange drawn as an SVG sequence diagram: one lifeline per session and the operator,
one arrow per message with its relay id, hop, state and verdict; halts and refusals marked.

Why the standard library's ElementTree and no drawing package: a sequence diagram is a few
lines, polygons and texts on a grid, and ElementTree escapes every text and attribute for
XML (`<`, `>`, `&`, quotes), so a peer's `<script>` can only ever be text. Before it is
escaped, every text passes the one neutraliser (`core.controls.visible`): a bidi override
(U+202E) or an escape sequence in a reply is shown as `⟨U+202E⟩` / `\\x1b`, never obeyed by a
viewer. Characters XML 1.0 cannot hold at all are shown the same way.

The drawing keeps to crisp, solid, single-colour strokes on integer pixels (`LIFELINE`,
`ARROW_COLOURS`) so a screenshot can be checked by counting pixels, as the tests do.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from relay_repl.core.controls import gist, visible
from relay_repl.core.exchange import Exchange, Mark, Message

LIFELINE = "#7f7f7f"
SEND = "#1565c0"
REPLY = "#2e7d32"
REFUSED = "#e65100"
HALT = "#c62828"
ARROW_COLOURS = (SEND, REPLY, REFUSED)

COLUMN = 300  # between two lifelines
LEFT = 170    # the first lifeline's x
TOP = 96      # the first row's y
ROW = 58      # one message (two lines of label above its arrow)
HEAD_H = 40
LABEL_CHARS = 46


def _xml_safe(text: str) -> str:
    """`text` through the one neutraliser, then anything XML 1.0 cannot hold shown as ⟨U+XXXX⟩."""
    out = []
    for ch in visible(text):
        o = ord(ch)
        ok = o in (0x9, 0xA, 0xD) or 0x20 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF
        out.append(ch if ok else f"⟨U+{o:04X}⟩")
    return "".join(out)



def _label(m: Message) -> str:
    parts = [m.relay_id or "(no id)", f"hop {m.hop}" if m.hop is not None else "hop ?", m.state]
    if m.verdict:
        parts.append(m.verdict)
    return " · ".join(parts)


def _text(parent: ET.Element, x: int, y: int, text: str, *, anchor: str = "middle", size: int = 12,
          colour: str = "#111111", weight: str | None = None) -> ET.Element:
    t = ET.SubElement(parent, "text", {"x": str(x), "y": str(y), "text-anchor": anchor, "font-size": str(size),
                                       "fill": colour})
    if weight:
        t.set("font-weight", weight)
    t.text = _xml_safe(text)
    return t


def render_svg(ex: Exchange) -> str:
    """The SVG document (UTF-8 text, with its XML declaration)."""
    rows = ex.rows
    n = len(ex.lifelines)
    width = LEFT * 2 + COLUMN * max(n - 1, 0)
    height = TOP + ROW * len(rows) + 40
    x_of = {name: LEFT + COLUMN * i for i, name in enumerate(ex.lifelines)}
    svg = ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": str(width), "height": str(height),
                             "viewBox": f"0 0 {width} {height}", "font-family": "DejaVu Sans Mono, monospace",
                             "shape-rendering": "crispEdges"})
    ET.SubElement(svg, "title").text = _xml_safe(ex.title)
    ET.SubElement(svg, "rect", {"x": "0", "y": "0", "width": str(width), "height": str(height), "fill": "#ffffff"})
    _text(svg, 12, 18, ex.title, anchor="start", size=12, colour="#444444")
    lines = ET.SubElement(svg, "g", {"id": "lifelines"})
    for name, x in x_of.items():
        g = ET.SubElement(lines, "g", {"class": "lifeline"})
        ET.SubElement(g, "rect", {"x": str(x - 130), "y": "28", "width": "260", "height": str(HEAD_H),
                                  "fill": "#f3f3f3", "stroke": "#333333", "stroke-width": "1"})
        _text(g, x, 28 + 25, gist(name, 32), weight="bold", size=13)
        ET.SubElement(g, "line", {"x1": str(x), "y1": str(28 + HEAD_H), "x2": str(x), "y2": str(height - 12),
                                  "stroke": LIFELINE, "stroke-width": "2"})
    arrows = ET.SubElement(svg, "g", {"id": "messages"})
    for i, row in enumerate(rows):
        y = TOP + ROW * i + 30
        if isinstance(row, Mark):
            _mark(arrows, row, y, width)
        else:
            _arrow(arrows, row, y, x_of)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(svg, encoding="unicode") + "\n"


def _arrow(parent: ET.Element, m: Message, y: int, x_of: dict[str, int]) -> None:
    x1, x2 = x_of[m.sender], x_of[m.receiver]
    colour = {"send": SEND, "reply": REPLY, "refused": REFUSED}[m.kind]
    g = ET.SubElement(parent, "g", {"class": f"message {m.kind}"})
    direction = 1 if x2 >= x1 else -1
    tip = x2 - direction * 2
    attrs = {"x1": str(x1), "y1": str(y), "x2": str(tip - direction * 10), "y2": str(y), "stroke": colour,
             "stroke-width": "2"}
    if m.kind == "refused":
        attrs["stroke-dasharray"] = "10 4"
    ET.SubElement(g, "line", attrs)
    ET.SubElement(g, "polygon", {"points": f"{tip},{y} {tip - direction * 12},{y - 6} {tip - direction * 12},{y + 6}",
                                 "fill": colour})
    mid = (x1 + x2) // 2
    label = _label(m)
    if m.kind == "refused" or m.state in ("failed", "halted", "interrupted", "abandoned"):
        label = f"✕ {label}"
    _text(g, mid, y - 22, label, colour=colour if m.kind != "send" else "#0d3c78", weight="bold", size=11)
    said = m.reason if m.kind == "refused" and m.reason else m.text
    _text(g, mid, y - 8, gist(said, LABEL_CHARS), size=11)


def _mark(parent: ET.Element, mark: Mark, y: int, width: int) -> None:
    g = ET.SubElement(parent, "g", {"class": f"mark {mark.kind}"})
    ET.SubElement(g, "line", {"x1": "8", "y1": str(y), "x2": str(width - 8), "y2": str(y), "stroke": HALT,
                              "stroke-width": "1", "stroke-dasharray": "4 4"})
    _text(g, width // 2, y - 8, ("■ " if mark.kind == "halt" else "") + gist(mark.text, 90), colour=HALT,
          weight="bold", size=11)
