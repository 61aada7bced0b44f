"""The picture of a run's exchange beside its report: `exchange.svg`, and the Markdown that embeds it.

Why in a report: a notebook run's `report.md` (and a recipe run's, `relay run --report DIR`)
is what an operator reads afterwards or commits; the sequence diagram shows at a glance who
was asked what, who answered, with which verdict, and where a halt or a refusal stopped it.
The SVG holds no times, like the report, so two runs' files diff by what happened only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay_repl.core.errors import RelayError
from relay_repl.store.ledger import Ledger

DIAGRAM = "exchange.svg"


def write_exchange_svg(ledger: Ledger, ref: str, path: Path) -> Path | None:
    """Draw the exchange of run (or relay id) `ref` into `path`; None when it holds no message."""
    from relay_repl.core.sequence_svg import render_svg
    from relay_repl.store.exchange import read_exchange

    try:
        ex = read_exchange(ledger, ref)
    except RelayError:
        return None
    if not ex.messages:
        return None
    path.write_text(render_svg(ex), encoding="utf-8")
    return path


def embed(svg: Path | None) -> list[str]:
    """The report's lines embedding the diagram (relative to the report, which sits beside it)."""
    if svg is None:
        return []
    return ["## The exchange", "", f"![sequence diagram of the exchange]({svg.name})", ""]


def write_run_report(ledger: Ledger, run: Any, where: Path) -> Path:
    """A recipe run's report: `where/report.md` with its steps, and `where/exchange.svg` embedded."""
    from relay_repl.core.controls import visible

    where.mkdir(parents=True, exist_ok=True)
    svg = write_exchange_svg(ledger, run.id, where / DIAGRAM)
    out = [f"# recipe {run.recipe}, run {run.id}", "", f"- state: {run.state}" + (f" ({run.reason})" if run.reason else ""),
           f"- rounds: {run.round}/{run.rounds}", ""]
    if run.params:
        out[-1:-1] = ["- parameters: " + ", ".join(f"`{k} = {v!r}`" for k, v in run.params.items())]
    out += embed(svg)
    if run.steps:
        out += ["## Steps", "", "```text", visible(run.table(), keep_newlines=True), "```", ""]
    path = where / "report.md"
    path.write_text("\n".join(out).rstrip("\n") + "\n", encoding="utf-8")
    return path
