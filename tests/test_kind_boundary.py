"""Nothing outside `relay_repl/agents/` names an agent kind (issue 19): the layers above ask the
registry. Checked on the syntax tree, so the rule is exact and the allowance small.

An offence is:
- a string constant equal (ignoring case) to a kind's name or prefix (`"codex"`, `"claude-code"`);
- a string constant containing a target spec of a kind (`<prefix>:` at a word start, `"claude:alpha"`),
  a transport only one kind's adapter declares (`"claude-code-socket"`, `"codex-queue"`: `tmux`, which
  every kind offers, is generic), or an environment variable a kind owns (its prefix upper-cased and
  `_`: `CLAUDE_CONFIG_DIR`, `CODEX_SANDBOX`, `GEMINI_...`);
- an identifier (function, class, parameter, variable, attribute, keyword argument) with a kind's
  prefix as one of its words (`busy_claude_enter...`, `up(claude=...)`, `CLAUDE = ...`, `ClaudeDetail`);
- an import of a module whose dotted path names a kind (`relay_repl.agents.codex`,
  `relay_repl.transports.claude_socket`).

Not offences: docstrings (any string statement) and the help=/description=/epilog=/usage= arguments
of a call (argparse's help texts), which may mention a kind as an example; and comments. Allowed
folders: `relay_repl/agents/` (the kinds' packages and the protocol they share) and `relay_repl/testing/`
(replay doubles of the kinds' files, beside the product like tests/).

What is legitimately left (an example in an error message or a hint) is in EXAMPLES, keyed by module
and the exact constant, each with why; the test also fails when an entry no longer occurs, so the
list can only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from relay_repl.agents import registry
from relay_repl.frontends import repl

ROOT = Path(__file__).resolve().parents[1] / "relay_repl"
ALLOWED = ("agents/", "testing/")
FUTURE = {"gemini", "gemini-cli"}  # named here in case its package is not installed in this tree
HELP_ARGS = {"help", "description", "epilog", "usage"}

EXAMPLES: dict[tuple[str, str], str] = {
    ("core/recipe.py", " is not a target: name one like claude:alpha or codex:beta"):
        "an error message's example of a target (core sits below the registry and cannot ask it)",
    ("core/recipe.py", ": name a target (claude:alpha) or one target parameter ({writer})"):
        "an error message's example of a target (core sits below the registry and cannot ask it)",
    ("frontends/repl.py", repl.BANNER):
        "the REPL's help banner: examples of sends to a target",
}
"""(module, the exact string constant) -> why an example of a kind's name may stay there."""


class Vocab:
    """What names a kind, derived from the registry (so a new kind is covered without editing this)."""

    def __init__(self) -> None:
        self.names = set(FUTURE)
        self.prefixes = {"gemini"}
        by_transport: dict[str, set[str]] = {}
        for k in registry.kinds():
            self.names |= {k.facts.kind.lower(), k.facts.prefix.lower()}
            self.prefixes.add(k.facts.prefix.lower())
            for t in k.transports.specs():
                by_transport.setdefault(t.name, set()).add(k.facts.kind)
        self.transports = {t for t, ks in by_transport.items() if len(ks) == 1}
        self.tokens = {n.replace("-", "_") for n in self.names}
        alts = "|".join(sorted(map(re.escape, self.prefixes)))
        self.spec = re.compile(rf"(?<![\w\-.])(?:{alts}):(?=[\w*])", re.I)
        self.env = re.compile(rf"(?<![A-Za-z0-9])(?:{alts.upper()})_[A-Z0-9_]*[A-Z0-9]")
        self.transport = re.compile(
            rf"(?<![\w\-])(?:{'|'.join(sorted(map(re.escape, self.transports)))})(?![\w\-])") if self.transports else None

    def string_offence(self, s: str) -> str | None:
        if s.lower() in self.names:
            return "a kind's name"
        if self.spec.search(s):
            return "a target spec"
        if self.transport is not None and self.transport.search(s):
            return "a kind's transport"
        if self.env.search(s):
            return "a kind's environment variable"
        return None

    def identifier_offence(self, ident: str) -> bool:
        words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", ident).lower().split("_")
        return any(w in self.prefixes for w in words)


def _exempt_strings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (string statements) or help texts (a help=,
    description=, epilog= or usage= argument, or a module constant passed as one: `epilog=EPILOG`)."""
    out: set[int] = set()
    help_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            out |= {id(n) for n in ast.walk(node.value)}
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in HELP_ARGS:
                    out |= {id(n) for n in ast.walk(kw.value)}
                    if isinstance(kw.value, ast.Name):
                        help_names.add(kw.value.id)
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in help_names for t in node.targets):
            out |= {id(n) for n in ast.walk(node.value)}
    return out


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[-1]]
    return []


def offences(path: Path, vocab: Vocab) -> list[tuple[int, str, str]]:
    """(line, what, the constant or identifier) for each offence in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = _exempt_strings(tree)
    out: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in exempt:
            why = vocab.string_offence(node.value)
            if why:
                out.append((node.lineno, why, node.value))
        for ident in _identifiers(node):
            if vocab.identifier_offence(ident) and not isinstance(node, ast.alias):
                out.append((getattr(node, "lineno", 0), "an identifier", ident))
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        for m in modules:
            if any(part in vocab.tokens or part.split("_")[0] in vocab.tokens for part in m.split(".")[1:]):
                out.append((node.lineno, "an import", m))
                break
    return sorted(set(out))


def scan() -> dict[str, list[tuple[int, str, str]]]:
    vocab = Vocab()
    found: dict[str, list[tuple[int, str, str]]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(ALLOWED):
            continue
        hits = offences(path, vocab)
        if hits:
            found[rel] = hits
    return found


def test_no_module_outside_the_agent_packages_names_a_kind():
    found = scan()
    unexpected = {m: [f"line {n}: {what}: {text!r}" for n, what, text in hits if (m, text) not in EXAMPLES]
                  for m, hits in found.items()}
    unexpected = {m: h for m, h in unexpected.items() if h}
    assert not unexpected, "modules naming an agent kind (ask the registry instead):\n" + "\n".join(
        f"{m}: {h}" for m, h in unexpected.items())


def test_every_allowed_example_still_occurs():
    found = scan()
    gone = sorted(key for key in EXAMPLES if not any(text == key[1] for *_, text in found.get(key[0], [])))
    assert not gone, f"no longer in the module: remove from EXAMPLES: {gone}"


def test_the_rule_catches_what_it_should(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text(
        'import relay_repl.agents.codex.rollout\n'                                # 1 import
        'from relay_repl.transports import claude_socket\n'                       # 2 import
        'if t.kind == "claude-code": pass\n'                                      # 3 name
        'SPEC = "send to claude:alpha or codex:beta"\n'                           # 4 spec
        'T = ("codex-queue", "tmux")\n'                                           # 5 transport (tmux is generic)
        'x = os.environ.get("CODEX_SANDBOX")\n'                                   # 6 environment variable
        'async def busy_claude_enter(): pass\n'                                   # 7 identifier
        'up(claude=1, n=2)\n'                                                     # 8 keyword
        'def f(gemini_home): """a docstring may say claude:alpha and CODEX_HOME"""\n'  # 9 parameter only
        'ap.add_argument("--to", help="e.g. claude:alpha")\n'                     # 10 help text: fine
        'OK = "relay:alpha and eclaude:x and tmux and my-codex-queue-x"\n'        # 11 fine
        'class ClaudeDetail: pass\n'                                              # 12 identifier
        'EPILOG = "e.g. relay send codex:beta hi"\n'                             # 13 help text by name: fine
        'P(prog="relay", epilog=EPILOG)\n')                                      # 14
    hits = offences(sample, Vocab())
    assert sorted({n for n, *_ in hits}) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 12], hits
    assert (4, "a target spec", "send to claude:alpha or codex:beta") in hits
    assert (5, "a kind's transport", "codex-queue") in hits
    assert (6, "a kind's environment variable", "CODEX_SANDBOX") in hits
    assert [h for h in hits if h[0] == 9] == [(9, "an identifier", "gemini_home")], hits
