"""No model that `relay targets` builds has a builtin as its default factory (issue 40).

pydantic asks `inspect.signature(factory)` whether a default factory takes the validated data;
for a builtin (`list`, `time.time`) that parses its text signature with tokenize, compiling
tokenize's pseudo-token regex on the listing's cold path. A Python function (or a tuple default)
answers the same question without it."""

from __future__ import annotations

import importlib
import inspect
import types

from pydantic import BaseModel

# the modules whose models a listing of all three kinds builds (a Gemini pane's state: screens.model)
LISTING_MODULES = (
    "relay_repl.core.target", "relay_repl.agents.adapter", "relay_repl.agents.screens.model",
    "relay_repl.agents.claude_code.detail", "relay_repl.agents.claude_code.provider",
    "relay_repl.agents.codex.detail", "relay_repl.agents.codex.provider",
    "relay_repl.agents.gemini_cli.detail", "relay_repl.agents.gemini_cli.chats",
)


def _builtin(factory: object) -> bool:
    """A builtin whose signature inspect reads from text (`list`, `time.time`; `dict` has none)."""
    builtin = isinstance(factory, types.BuiltinFunctionType) or (
        isinstance(factory, type) and factory.__module__ == "builtins")
    return builtin and getattr(factory, "__text_signature__", None) is not None


def test_no_listing_model_defaults_through_a_builtin_factory():
    found = []
    for name in LISTING_MODULES:
        mod = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, BaseModel) and cls.__module__ == name:
                for field, info in cls.model_fields.items():
                    if info.default_factory is not None and _builtin(info.default_factory):
                        found.append(f"{name}.{cls_name}.{field}: {info.default_factory!r}")
    assert found == []
