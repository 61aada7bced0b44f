"""Finding, running, resuming and saving recipes (the session's side of issue 9).

A recipe NAME is looked up in `./recipes/` (the project you run relay from),
the recipes shipped with relay_repl, and `$RELAY_HOME/recipes/`, in that order;
a path ending in `.toml` is read as it is. Front ends call these and print.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import UsageError
from relay_repl.core.recipe import Recipe, RecipeError, parse_recipe
from relay_repl.session.runs.runner import Run, Runner, load_prior, read_source
from relay_repl.store import recipe_places
from relay_repl.store.paths import state_dir

if TYPE_CHECKING:  # annotations only: a recipe run's first plan needs no notebook cells (issue 40)
    from relay_repl.core.notebook_cells import Notebook



shipped_dir = recipe_places.shipped_dir  # their one home: store/recipe_places.py (a plain pre-plan finds
recipe_dirs = recipe_places.recipe_dirs  # the recipe file before this module loads)


def find_recipe(ref: str) -> Path:
    """NAME, FILE.toml or FILE.py (a notebook) to a file; a miss says where it looked.
    For a NAME, a recipe NAME.toml comes before a notebook NAME.py in the same place."""
    if ref.endswith((".toml", ".py")) or "/" in ref:
        p = Path(ref).expanduser()
        if not os.path.lexists(p):  # a directory or FIFO there is for the loader to name, not "no such file"
            raise RecipeError(f"no recipe file {ref}: give an existing .toml or notebook .py file, or a name from "
                              "`relay recipes`")
        return p
    for d in recipe_dirs():
        for p in (d / f"{ref}.toml", d / f"{ref}.py"):
            if os.path.lexists(p) and (p.suffix == ".toml" or is_notebook(p)):
                return p
    names = ", ".join(sorted({p.stem for d in recipe_dirs() for p in d.glob("*.toml")}
                             | {p.stem for p, _ in list_notebooks()})) or "none"
    raise RecipeError(f"no recipe named {ref!r} (known: {names}); `relay recipes` lists them")


def is_notebook(path: Path) -> bool:
    """A `.py` file with `# %%` cells (the percent format), not any Python file."""
    from relay_repl.core.errors import FileProblem
    from relay_repl.session.runs.notebook import NOTEBOOK_FIX
    from relay_repl.store.loader import read_text

    try:  # the one loader: a FIFO named x.py is refused, never opened for a blocking read
        text = read_text(path, NOTEBOOK_FIX) or ""
    except FileProblem:
        return False
    return any(line.startswith("# %%") for line in text.splitlines())


def list_notebooks() -> list[tuple[Path, Notebook | UsageError]]:
    """Every notebook on the same shelf as the recipes (same places, first name wins); a bad one with its error."""
    from relay_repl.session.runs.notebook import read_notebook

    seen: set[str] = set()
    out: list[tuple[Path, Notebook | UsageError]] = []
    for d in recipe_dirs():
        for p in sorted(d.glob("*.py")):
            if p.stem in seen or not is_notebook(p):
                continue
            seen.add(p.stem)
            try:
                nb = read_notebook(p)
                nb.defaults()
                out.append((p, nb))
            except UsageError as exc:
                out.append((p, exc))
    return out


def list_recipes() -> list[tuple[Path, Recipe | RecipeError]]:
    """Every recipe file found, first occurrence of a name wins; a bad file is listed with its error."""
    seen: set[str] = set()
    out: list[tuple[Path, Recipe | RecipeError]] = []
    for d in recipe_dirs():
        for p in sorted(d.glob("*.toml")):
            if p.stem in seen:
                continue
            seen.add(p.stem)
            try:
                out.append((p, parse_recipe(read_source(p), str(p))))
            except RecipeError as exc:
                out.append((p, exc))
    return out


async def run_recipe(session: Any, ref: str, params: dict[str, Any] | None = None, *, dry_run: bool = False,
                     echo: Any = None, run_id: str | None = None, first_relay_id: str | None = None,
                     listing: dict[str, Any] | None = None) -> Run:
    """Run the recipe `ref` names. `run_id`, `first_relay_id` and `listing`: what a plain pre-plan of `relay run`
    already showed on the run's first plan (frontends/commands/run.py), pinned so that the run is the one shown
    (`listing`: the inbox listing's line said and its record's values drawn, a Claude run's first plan)."""
    path = find_recipe(ref)
    source = read_source(path)
    recipe = parse_recipe(source, str(path))
    resolved = recipe.resolve_params(params or {})
    runner = Runner(session, recipe, resolved, source=source, path=str(path), dry_run=dry_run, echo=echo,
                    run_id=run_id, first_relay_id=first_relay_id, listing=listing)
    await runner.discover()  # the kinds its targets name (issue 40), as a full refresh would for them
    return await runner.execute()


async def resume_run(session: Any, run_id: str, *, echo: Any = None) -> Run:
    """Continue a stopped run from the ledger: confirmed steps are never sent again."""
    start, prior, end = load_prior(session.ledger, run_id)
    recipe = parse_recipe(start["source"], start.get("path") or run_id)
    if end == "done":
        raise RecipeError(f"run {run_id} already finished; start a new one with `relay run {recipe.name}`")
    runner = Runner(session, recipe, start["params"], source=start["source"], path=start.get("path"), run_id=run_id,
                    echo=echo, resume=True)
    await runner.discover()
    runner.prior = prior
    return await runner.execute()


def _slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_").lower()
    return s if s and not s[0].isdigit() else f"p_{s}"


def recipe_from_deliveries(name: str, deliveries: list[Any], description: str = "") -> str:
    """TOML text for what was sent by hand: one step per send, in order; a target
    or a body used more than once becomes a parameter (its value the default)."""
    sends = []
    for d in deliveries:
        if d.plan is None or d.outcome == "refused":
            continue
        env = Envelope.parse(d.plan.payload)
        if env is None:
            continue
        sends.append((d.target, env.body, env.want, d.transport))
    if not sends:
        raise RecipeError("nothing was sent in this session yet: send (and wait for replies) first, then save")
    tcount: dict[str, int] = {}
    bcount: dict[str, int] = {}
    for t, b, _, _ in sends:
        tcount[t] = tcount.get(t, 0) + 1
        bcount[b] = bcount.get(b, 0) + 1
    params: dict[str, tuple[str, str]] = {}
    tparam: dict[str, str] = {}
    bparam: dict[str, str] = {}
    for t, n in tcount.items():
        if n > 1:
            pname = _slug(t.split(":", 1)[-1])
            while pname in params:
                pname += "_"
            params[pname], tparam[t] = ("target", t), pname
    for b, n in bcount.items():
        if n > 1:
            pname = f"text{len(bparam) + 1}"
            params[pname], bparam[b] = ("text", b), pname
    q = _toml_str
    lines = [f"name = {q(name)}", f"description = {q(description or 'saved from a REPL session')}", "rounds = 1", ""]
    for pname, (ptype, default) in params.items():
        lines += [f"[params.{pname}]", f"type = {q(ptype)}", f"default = {q(default)}", ""]
    for t, b, want, _ in sends:
        kind = "ask" if want == "reply" else "tell"
        to = "{" + tparam[t] + "}" if t in tparam else t
        body = "{" + bparam[b] + "}" if b in bparam else b.replace("{", "{{").replace("}", "}}")
        lines += ["[[steps]]", f"kind = {q(kind)}", f"to = {q(to)}", f"body = {q(body)}"]
        if kind == "tell":
            lines.append(f"want = {q(want)}")
        lines.append("")
    text = "\n".join(lines)
    parse_recipe(text, f"{name}.toml")  # what is written must load
    return text


def save_recipe(session: Any, name: str, *, description: str = "", overwrite: bool = False) -> Path:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name):
        raise RecipeError(f"recipe name {name!r} must be letters, digits, _ or -")
    text = recipe_from_deliveries(name, list(session.deliveries), description)
    d = state_dir() / "recipes"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.toml"
    if path.exists() and not overwrite:
        raise RecipeError(f"{path} exists: pick another name or pass overwrite=True")
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def _toml_str(s: str) -> str:
    """What is written must read back: the one TOML string writer (core/file_shape.toml_string)."""
    from relay_repl.core.file_shape import toml_string

    return toml_string(s)
