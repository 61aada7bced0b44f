"""A notebook file: plain Python in the jupytext "percent" format, read as cells (issue 18).

Why this format: the file opens as cells in VS Code, PyCharm, Spyder and jupytext, diffs as
code, and `python FILE.py` still parses it (top-level `await` aside). So the notebook is
never a JSON document that needs Jupyter to read; outputs live beside it, never in it.

    # %% [markdown]
    # Ask every live target what it works on.

    # %% tags=["parameters"]
    follow_up = "claude:alpha"
    timeout = 60

    # %% ask everyone
    ds = [await session.send(t.spec, "what are you working on?", want="reply") for t in session.targets]

A `# %%` line starts a code cell; text after it is the title, then jupytext metadata
(`key=value`, the value JSON or a bare word); `[markdown]` (or `[md]`) makes a prose cell
whose lines drop their leading `# `. Lines before the first `# %%` are a cell of their own
when not blank. Every code cell is checked to compile (with top-level `await` allowed)
before any runs: a syntax error is one line naming `file:line:col` and the cell.

Pure: imports nothing above core.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from relay_repl.core.errors import FileProblem, UsageError

_HEADER = re.compile(r"^#\s*%%(?!%)(.*)$")
_META = re.compile(r"""([A-Za-z_][\w.-]*)=(\[[^\]]*\]|\{[^}]*\}|"(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")
_TYPE = re.compile(r"\[(markdown|md|raw)\]")
TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_TARGET_SPEC = re.compile(r"^(?:[a-z][a-z0-9-]*:[^\s/:]+|%\d+)$")


class NotebookError(UsageError):
    """A notebook file or a parameter is wrong: one line, exit 2, before any cell runs."""


class NotebookFileProblem(FileProblem, NotebookError):
    """A notebook file (or a run's output file) that cannot be read: `FILE: what is wrong (line L): what to do`."""


class Cell(BaseModel):
    """One cell as the file holds it; `line` is where its source starts in the file (1-based)."""

    index: int = Field(description="1-based position among all cells of the file")
    kind: Literal["code", "markdown", "raw"] = "code"
    title: str = ""
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str = ""
    line: int = 1

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()

    @property
    def label(self) -> str:
        """How the operator sees the cell in headings and errors: `cell 3 "ask everyone"`."""
        return f'cell {self.index} "{self.title}"' if self.title else f"cell {self.index}"


class Notebook(BaseModel):
    path: str
    cells: list[Cell]

    @property
    def code_cells(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "code"]

    @property
    def parameters_cell(self) -> Cell | None:
        return next((c for c in self.code_cells if "parameters" in c.tags), None)

    @property
    def title(self) -> str:
        """The first markdown heading, else the first markdown line, else ''."""
        for c in self.cells:
            if c.kind == "markdown":
                for line in c.source.splitlines():
                    if line.strip():
                        return line.strip().lstrip("#").strip()
        return ""

    def defaults(self) -> dict[str, Any]:
        """The parameters cell's `name = literal` assignments (papermill's convention)."""
        cell = self.parameters_cell
        return parameter_defaults(cell, self.path) if cell is not None else {}


def _header(rest: str) -> tuple[str, str, dict[str, Any]]:
    """`# %%` line's tail → (kind, title, metadata)."""
    kind = "code"
    m = _TYPE.search(rest)
    cut = len(rest)
    if m:
        kind = "raw" if m.group(1) == "raw" else "markdown"
        cut = m.start()
    meta: dict[str, Any] = {}
    for mm in _META.finditer(rest):
        if mm.start() < cut:
            cut = mm.start()
        raw = mm.group(2)
        try:
            meta[mm.group(1)] = json.loads(raw)
        except ValueError:
            meta[mm.group(1)] = raw.strip("'\"")
    return kind, rest[:cut].strip(), meta


def _uncomment(lines: list[str]) -> str:
    out = []
    for line in lines:
        if line.startswith("# "):
            out.append(line[2:])
        elif line.startswith("#"):
            out.append(line[1:])
        else:
            out.append(line)
    return "\n".join(out).strip("\n")


def parse_cells(text: str, path: str = "<notebook>") -> Notebook:
    """Split a percent-format file into cells and check that every code cell compiles."""
    lines = text.splitlines()
    cells: list[Cell] = []
    start, head = 0, None  # head: (kind, title, meta) of the cell being read, None for the preamble

    def close(end: int) -> None:
        body = lines[start:end]
        meta: dict[str, Any]
        if head is None:
            if not any(s.strip() for s in body):
                return
            kind, title, meta = "code", "", {}
        else:
            kind, title, meta = head
        # the source keeps its place in the file: leading blank lines are dropped, and `line` moved on
        first = start
        while first < end and not lines[first].strip():
            first += 1
        while end > first and not lines[end - 1].strip():
            end -= 1
        chunk = lines[first:end]
        source = _uncomment(chunk) if kind != "code" else "\n".join(chunk)
        raw_tags = meta.get("tags")
        tags = [str(t) for t in raw_tags] if isinstance(raw_tags, list) else []
        cells.append(Cell(index=len(cells) + 1, kind=kind, title=title, tags=tags,
                          metadata=meta, source=source, line=first + 1))

    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m is None:
            continue
        close(i)
        head = _header(m.group(1))
        start = i + 1
    close(len(lines))
    nb = Notebook(path=path, cells=cells)
    if not any(_HEADER.match(line) for line in lines):
        raise NotebookError(f"{path}: no `# %%` cell marker: a notebook is a Python file in the percent format "
                            "(start each cell with a `# %%` line)")
    for c in nb.code_cells:
        compile_cell(c, path)
    return nb


def cell_ast(cell: Cell, path: str) -> ast.Module:
    """The cell parsed with top-level `await`, its line numbers those of the file (tracebacks point there)."""
    try:
        tree = compile(cell.source, path, "exec", flags=ast.PyCF_ONLY_AST | TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        line = (exc.lineno or 1) + cell.line - 1
        col = exc.offset or 1
        raise NotebookError(f"{path}:{line}:{col}: syntax error in {cell.label}: {exc.msg}") from None
    except ValueError:  # a NUL in the source: compile() raises ValueError, not SyntaxError
        raise NotebookError(f"{path}:{cell.line}: {cell.label} holds a NUL byte: remove it (is the file binary, "
                            "or cut short while written?)") from None
    except (RecursionError, MemoryError):
        raise NotebookError(f"{path}:{cell.line}: {cell.label} is nested too deeply for Python to compile: "
                            "split the expression") from None
    assert isinstance(tree, ast.Module)
    ast.increment_lineno(tree, cell.line - 1)
    return tree


def compile_cell(cell: Cell, path: str) -> tuple[Any, Any]:
    """(statements, last expression or None): the last expression is compiled apart so its
    value can be shown and recorded, as a REPL shows it. Cached by source and place: the
    check before any cell runs and the run itself compile each cell once."""
    key = (cell.source, cell.line, path)
    hit = _COMPILED.get(key)
    if hit is None:
        hit = _compile_cell(cell, path)
        if len(_COMPILED) >= 512:
            _COMPILED.pop(next(iter(_COMPILED)))
        _COMPILED[key] = hit
    return hit


_COMPILED: dict[tuple[str, int, str], tuple[Any, Any]] = {}


def _compile_cell(cell: Cell, path: str) -> tuple[Any, Any]:
    tree = cell_ast(cell, path)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        expr = ast.Expression(body=tree.body.pop().value)  # type: ignore[attr-defined]
        last = _compile(expr, path, "eval", cell)
    return _compile(tree, path, "exec", cell), last


def _compile(tree: ast.Module | ast.Expression, path: str, mode: str, cell: Cell) -> Any:
    try:
        return compile(tree, path, mode, flags=TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:  # e.g. `return` outside a function: found only when compiling
        raise NotebookError(f"{path}:{exc.lineno or cell.line}:{exc.offset or 1}: syntax error in {cell.label}: "
                            f"{exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise NotebookError(f"{path}:{cell.line}: {cell.label} is nested too deeply for Python to compile: "
                            "split the expression") from None


def parameter_defaults(cell: Cell, path: str) -> dict[str, Any]:
    """Each `name = <literal>` of the parameters cell; anything else there is an error (a default
    must be a plain value, so a `-p` can be typed by it)."""
    out: dict[str, Any] = {}
    for node in cell_ast(cell, path).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise NotebookError(f"{path}:{node.lineno}: the parameters cell sets {name} to an expression; a default "
                                "must be a literal (a number, text, True/False, a list)") from None
    return out


def looks_like_target(value: Any) -> bool:
    """A default such as `claude:alpha`, `codex:beta` or `%12`: a `-p` for it must name a live target."""
    return isinstance(value, str) and bool(_TARGET_SPEC.match(value))


def convert_param(name: str, raw: str, defaults: dict[str, Any], path: str) -> Any:
    """A `-p name=raw` value, typed by the default (bool, int, float, str); one line on a mistake."""
    if name not in defaults:
        known = ", ".join(sorted(defaults)) or "none (the notebook has no cell tagged parameters)"
        raise NotebookError(f"{path}: no parameter {name} (known: {known})")
    default = defaults[name]
    if isinstance(default, bool):
        low = raw.strip().lower()
        if low in ("true", "yes", "1", "on"):
            return True
        if low in ("false", "no", "0", "off"):
            return False
        raise NotebookError(f"{path}: -p {name}={raw!r}: {name} is a bool (default {default}); give true or false")
    for kind in (int, float):
        if type(default) is kind:
            try:
                return kind(raw)
            except ValueError:
                raise NotebookError(f"{path}: -p {name}={raw!r}: {name} is an {kind.__name__} (default {default!r}); "
                                    f"give a number") from None
    if isinstance(default, list):
        return [v.strip() for v in raw.split(",") if v.strip()]
    if default is None or isinstance(default, str):
        return raw
    raise NotebookError(f"{path}: -p {name}: its default {default!r} is a {type(default).__name__}, which -p "
                        "cannot type; give it an int, float, bool or text default")


def injected_cell(after: Cell | None, values: dict[str, Any]) -> Cell:
    """Papermill's `injected-parameters` cell: the `-p` values, placed right after the parameters cell."""
    source = "\n".join(f"{k} = {v!r}" for k, v in values.items())
    return Cell(index=0, kind="code", title="injected-parameters", tags=["injected-parameters"], source=source,
                line=after.line if after is not None else 1)
