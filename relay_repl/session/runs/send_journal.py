"""One send of a run, as its journal holds it for resume: the one model notebooks and recipes share.

Why one model: a notebook run and a recipe run both write, BEFORE the gate is asked, a row naming
the relay id a send took, so a resume answers that send from the ledger instead of sending it
again (session/runs/journal.py judges what the ledger proves of it). Each runner used to keep its own
idea of that row (a notebook's raw dict, a recipe's `StepRun` rebuilt field by field); now both
write and read `JournalSend`, and only where the send stood in the run differs: a notebook's
(cell, call), a recipe's (round, step).

The rows on disk are unchanged: `notebook-send` and `run-step`, each with the fields and digest
the previous versions wrote (`row()` gives exactly them), so a run stopped by an older relay
resumes here, and is judged the same way, without anything being sent twice.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from relay_repl.session.runs.journal import check_row

ROW_KIND = {"notebook": "notebook-send", "recipe": "run-step"}
"""The journal row each runner writes for one send (its ledger event kind)."""


class JournalSend(BaseModel):
    """One send of a run, recorded before the gate was asked."""

    model_config = ConfigDict(frozen=True)

    runner: Literal["notebook", "recipe"]
    relay_id: str
    target: str
    want: str = "none"
    at: tuple[int, int]
    """Where it stood in the run: a notebook's (cell, call number), a recipe's (round, step)."""
    body: str | None = None  # a notebook's (a recipe's body is rendered again from its text)
    hop: int | None = None  # a recipe's
    kind: str = "send"  # a recipe step's kind (ask, tell, forward, ...)
    sha256: str | None = None  # the notebook cell's source, to refuse a resume of a changed cell
    path: str | None = None  # the notebook file
    replayed_from: str | None = None  # answered from this earlier run's journal, not sent again

    @property
    def row_kind(self) -> str:
        return ROW_KIND[self.runner]

    @classmethod
    def read(cls, run_id: str, event: Any) -> JournalSend:
        """A `notebook-send` or `run-step` row of run `run_id`, checked as the run wrote it (else
        JournalMismatch): the rows this and every earlier version wrote."""
        check_row(run_id, event)
        d = event.data
        if event.kind == "notebook-send":
            return cls(runner="notebook", relay_id=str(d["relay_id"]), target=str(d["target"]),
                       want=str(d.get("want") or "none"), at=(int(d["cell"]), int(d["call"])), body=str(d["body"]),
                       sha256=d.get("sha256"), path=d.get("path"), replayed_from=d.get("replayed_from"))
        if event.kind == "run-step":
            return cls(runner="recipe", relay_id=str(d["relay_id"]), target=str(d["target"]),
                       want=str(d.get("want") or "none"), at=(int(d["round"]), int(d["step"])), hop=d.get("hop"),
                       kind=str(d["kind"]))
        raise ValueError(f"not a journal send row: {event.kind}")

    def row(self) -> dict[str, Any]:
        """The row's fields as written to the ledger (the runner adds its run id and the digest)."""
        if self.runner == "notebook":
            out: dict[str, Any] = {"cell": self.at[0], "sha256": self.sha256, "call": self.at[1],
                                   "target": self.target, "body": self.body, "want": self.want,
                                   "relay_id": self.relay_id}
            if self.path is not None:
                out["path"] = self.path
            if self.replayed_from is not None:
                out["replayed_from"] = self.replayed_from
            return out
        return {"round": self.at[0], "step": self.at[1], "kind": self.kind, "target": self.target,
                "relay_id": self.relay_id, "hop": self.hop, "want": self.want}
