"""Reading a percent-format notebook: cells, titles, jupytext metadata, the parameters
cell, `-p` typing, and a syntax error as one line naming file:line:col and the cell."""

from __future__ import annotations

import pytest

from relay_repl.core.notebook_cells import NotebookError, convert_param, parse_cells

TEXT = '''"""preamble docstring"""

# %% [markdown]
# # Triage
# Ask everyone.

# %% tags=["parameters"]
who = "claude:alpha"
n = 3
ratio = 0.5
loud = False

# %% ask everyone
ds = [await session.send(who, "hi", want="reply") for _ in range(n)]

# %% Summary table tags=["report"] key="v 1"
print(ds)
'''


def test_cells_titles_kinds_tags_and_file_lines():
    nb = parse_cells(TEXT, "t.py")
    assert [(c.index, c.kind, c.title, c.tags) for c in nb.cells] == [
        (1, "code", "", []), (2, "markdown", "", []), (3, "code", "", ["parameters"]),
        (4, "code", "ask everyone", []), (5, "code", "Summary table", ["report"])]
    assert nb.cells[1].source == "# Triage\nAsk everyone."
    assert nb.cells[3].line == 14 and nb.cells[3].source.startswith("ds = [await")
    assert nb.cells[4].metadata == {"tags": ["report"], "key": "v 1"}
    assert nb.title == "Triage"
    assert nb.defaults() == {"who": "claude:alpha", "n": 3, "ratio": 0.5, "loud": False}


def test_a_syntax_error_is_one_line_with_file_line_col_and_the_cell():
    bad = TEXT.replace('print(ds)', 'print(ds')
    with pytest.raises(NotebookError) as e:
        parse_cells(bad, "t.py")
    msg = str(e.value)
    assert msg.startswith("t.py:17:6: ") and 'cell 5 "Summary table"' in msg and "\n" not in msg
    assert e.value.exit_code == 2


def test_return_outside_function_is_found_before_any_cell_runs():
    with pytest.raises(NotebookError, match=r"^t.py:2:1: syntax error in cell 1 \"x\""):
        parse_cells("# %% x\nreturn 1\n", "t.py")


def test_a_file_without_cell_markers_is_refused():
    with pytest.raises(NotebookError, match="no `# %%` cell marker"):
        parse_cells("print(1)\n", "t.py")


def test_parameters_are_typed_by_their_default():
    d = {"n": 3, "ratio": 0.5, "loud": False, "who": "claude:alpha"}
    assert convert_param("n", "7", d, "t.py") == 7
    assert convert_param("ratio", "2", d, "t.py") == 2.0
    assert convert_param("loud", "yes", d, "t.py") is True
    assert convert_param("who", "codex:beta", d, "t.py") == "codex:beta"
    with pytest.raises(NotebookError, match="no parameter colour"):
        convert_param("colour", "red", d, "t.py")
    with pytest.raises(NotebookError, match="n is an int"):
        convert_param("n", "three", d, "t.py")
    with pytest.raises(NotebookError, match="loud is a bool"):
        convert_param("loud", "maybe", d, "t.py")


def test_a_parameters_cell_default_must_be_a_literal():
    nb = parse_cells("# %% tags=[\"parameters\"]\nx = len('ab')\n", "t.py")
    with pytest.raises(NotebookError, match="t.py:2: the parameters cell sets x to an expression"):
        nb.defaults()
