"""The stub model APIs are found by name (lab/stubs/apis.py): each kind's lab names the API its
sessions talk, one module speaks it, and nothing else in the stub server names an API, so a
kind added with its own API module (issue 19 item 5) edits no other stub file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from relay_repl.agents import registry
from relay_repl.lab.stubs import apis
from relay_repl.lab.stubs.server import SessionSpec

STUBS = Path(apis.__file__).resolve().parent


def test_every_lab_kind_talks_a_stub_api_this_package_speaks() -> None:
    wanted = {d.spec.stub_api for k in registry.kinds() if (d := k.lab_driver()) is not None}
    assert wanted and wanted <= set(apis.names())
    for name in wanted:
        assert apis.api(name).respond is not None


def test_an_unknown_api_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="no stub API 'nope'"):
        SessionSpec(name="a", api="nope")


def test_no_shared_stub_module_names_an_api() -> None:
    """server.py, converse.py, script.py, ... hold no string constant equal to an API's name: they
    ask `apis.api(name)` (before this, server.py dispatched on `"google"` and converse chose the
    shell tool by it)."""
    names = set(apis.names())
    offences = []
    for path in sorted(STUBS.glob("*.py")):
        if path.stem in names:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in names:
                offences.append(f"{path.name}:{node.lineno} {node.value!r}")
            if isinstance(node, ast.ImportFrom | ast.Import):
                mods = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                offences += [f"{path.name}:{node.lineno} imports {m}" for m in mods if m.rsplit(".", 1)[-1] in names]
    assert offences == []
