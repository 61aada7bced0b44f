"""One function builds every envelope (issue 35): `Envelope.header` in core/envelope.py.

Any other module that writes a relay/1 header by hand (an f-string, a literal the header parser
reads, a header sliced open to add a field) can drift from the encoding rules (percent-escapes,
field order, `re=` last) without a test noticing. The scan reads every module of the package
except core/envelope.py: a string literal or f-string (its `{...}` parts as a word) holding a
header the parser reads, a `"[relay/1 "` literal joined to more text, and `x.header[...]`, each
fail it. Words about the shape (`from=... id=<relay id>`) and probes that are not envelopes
(`[relay/1 test] typed while busy`) parse as no header, so they stay."""

from __future__ import annotations

import ast
from pathlib import Path

import relay_repl
from relay_repl.core.envelope import PREFIX, Envelope, header_of

PACKAGE = Path(relay_repl.__file__).parent
HOME = PACKAGE / "core" / "envelope.py"


def _text(node: ast.expr) -> str | None:
    """A literal's text, or an f-string's with each `{...}` as the word `x`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def hand_built_headers(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for v in node.values:  # the pieces of an f-string are checked as the whole, not one by one
                docs.add(id(v))
        text = _text(node) if isinstance(node, ast.expr) and id(node) not in docs else None
        if text is not None:
            at = text.find(PREFIX)
            while at >= 0:
                if header_of(text[at:]) is not None:
                    found.append((node.lineno, text[at:at + 60]))
                    break
                at = text.find(PREFIX, at + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for side in (node.left, node.right):
                t = _text(side)
                if t is not None and t.rstrip().endswith(PREFIX.rstrip()):
                    found.append((node.lineno, ast.unparse(node)[:60]))
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "header"):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_but_the_envelopes_own_writes_a_header():
    bad = [f"{p.relative_to(PACKAGE.parent)}:{line}: {what!r}" for p in sorted(PACKAGE.rglob("*.py")) if p != HOME
           for line, what in hand_built_headers(p.read_text(encoding="utf-8"))]
    assert bad == []


def test_the_scan_finds_each_way_a_header_was_written_by_hand():
    old = '''
payload = f"[relay/1 from=operator:relay@t to=peer id=t-{name}-{i} hop=0 want=none] idle tmux {name}"
LONG = ("[relay/1 from=operator:relay@rec to=peer id=rec-7 hop=0 want=none] a long line " + "more")
payload = f"[relay/1 want={want or 'none'}]"
head = plain.header[:-1] + f" re={encode_value(env.id)}]"
line = "[relay/1 " + " ".join(fields) + "] " + body
'''
    assert sorted(line for line, _ in hand_built_headers(old)) == [2, 3, 4, 5, 6]
    fine = '''
"""A docstring may show one: [relay/1 from=a:b@c to=peer id=c-1 hop=0 want=none] hi"""
INSTRUCTIONS = "`[relay/1 from=... to=... id=<relay id> hop=<k> want=<reply|ack|none>] <body>`"
rec.type(n, "[relay/1 test] typed while busy")
if line.startswith("[relay/1 ") and "]" in line:
    pass
line = Envelope.make(sender="operator:relay@t", to="peer", id="t-1", body="hi").compose()
'''
    assert hand_built_headers(fine) == []


def test_the_builder_writes_re_last_and_escapes_what_would_end_the_header():
    line = Envelope.make(sender="agent:codex@x]y", to="operator", id="x-1", hop=1, re="me-3", body="done").compose()
    assert line == "[relay/1 from=agent:codex@x%5Dy to=operator id=x-1 hop=1 want=none re=me-3] done"
    assert header_of(line) == {"from": "agent:codex@x]y", "to": "operator", "id": "x-1", "hop": "1", "want": "none",
                               "re": "me-3"}
    assert header_of("[relay/1 hop=1") is None and header_of("[relay/1 hop 1] x") is None and header_of(None) is None
