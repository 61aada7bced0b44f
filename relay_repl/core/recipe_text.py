"""A recipe's templates, read and filled with the standard library only (issue 40).

Why apart from core/recipe.py: that module is the pydantic models of a recipe file, and a plain
pre-plan of `relay run` (its first plan printed before pydantic and the event loop are loaded, as
`relay send`'s is: frontends/send_plain.py) must fill the first step's body exactly as the runner
does. One home for the template rules: `recipe.template_names` and `recipe.render` are these.
"""

from __future__ import annotations

import re

BUILTINS = ("round", "rounds", "run", "last")
"""The names every template may use besides the recipe's parameters and `reply.NAME`."""

TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


class MissingName(LookupError):
    """A name the template uses has no value (its message is the sentence to show)."""


def template_names(template: str) -> list[str]:
    """Every `{name}` a template uses, in order; a stray brace is an error (ValueError)."""
    names: list[str] = []
    for m in TOKEN.finditer(template):
        tok = m.group(0)
        if tok in ("{{", "}}"):
            continue
        if tok in ("{", "}"):
            raise ValueError(f"stray {tok!r} in {template!r} (write {tok * 2} for a literal brace)")
        name = (m.group(1) or "").strip()
        if not name:
            raise ValueError(f"empty {{}} in {template!r}")
        names.append(name)
    return names


def render(template: str, values: dict[str, str]) -> str:
    """Fill a template checked at load time; a name missing now raises MissingName (a bug, not a guess)."""

    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        name = (m.group(1) or "").strip()
        if name not in values:
            raise MissingName(f"template {template!r} names {{{name}}}, which has no value in this run")
        return values[name]

    return TOKEN.sub(sub, template)
