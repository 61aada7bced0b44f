"""Nothing outside `relay_repl/agents/` names an agent kind (issue 19): the layers above ask the
registry. Checked on the syntax tree, so the rule is exact and the allowance small:

- an offence is a string constant equal (ignoring case) to a kind's name or prefix (`"codex"`,
  `"claude-code"`, `"claude"`, and `gemini` ahead of its package), or an import of a module whose
  dotted path names one (`relay_repl.agents.codex`, `relay_repl.transports.claude_socket`);
- help texts, docstrings and examples may mention a kind: they are longer strings, never equal;
- allowed: `relay_repl/agents/` (the kinds' packages and the protocol they share) and
  `relay_repl/testing/` (replay doubles of the kinds' files, beside the product like tests/).

PENDING names the modules not yet moved behind the registry, each with why; the test also fails
when one of them no longer offends, so the list can only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

from relay_repl.agents import registry

ROOT = Path(__file__).resolve().parents[1] / "relay_repl"
ALLOWED = ("agents/", "testing/")
FUTURE = {"gemini", "gemini-cli"}  # the next kind, named here before its package exists
PENDING: dict[str, str] = {}


def _names() -> set[str]:
    found = set(FUTURE)
    for k in registry.kinds():
        found |= {k.kind.lower(), k.prefix.lower()}
    return found


def _tokens(names: set[str]) -> set[str]:
    return {n.replace("-", "_") for n in names}


def offences(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tokens = _tokens(names)
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in names:
            out.append(f"line {node.lineno}: {node.value!r}")
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        for m in modules:
            if any(part in tokens or part.split("_")[0] in tokens for part in m.split(".")[1:]):
                out.append(f"line {node.lineno}: import {m}")
                break
    return out


def scan() -> dict[str, list[str]]:
    names = _names()
    found: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(ALLOWED):
            continue
        hits = offences(path, names)
        if hits:
            found[rel] = hits
    return found


def test_no_module_outside_the_agent_packages_names_a_kind():
    found = scan()
    unexpected = {m: h for m, h in found.items() if m not in PENDING}
    assert not unexpected, f"modules naming an agent kind (ask the registry instead): {unexpected}"


def test_the_pending_list_only_shrinks():
    found = scan()
    done = sorted(m for m in PENDING if m not in found)
    assert not done, f"no longer naming a kind: remove from PENDING: {done}"


def test_the_rule_catches_what_it_should(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text('import relay_repl.agents.codex.rollout\nfrom relay_repl.transports import claude_socket\n'
                      'if t.kind == "claude-code": pass\nHELP = "send to claude:alpha or codex:beta"\n')
    hits = offences(sample, _names())
    assert [h.split(":")[0] for h in hits] == ["line 1", "line 2", "line 3"], hits
