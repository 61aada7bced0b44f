"""One `relay doctor` row: a value every layer can produce (the agent kinds add their own rows).

A row passes only on evidence it gathered, and says what it ran or read (issue 39: with no `claude`
on PATH and no Claude directory, `claude agents --json` passed with "0 live session(s)"). A row with
nothing there to check (its client not found, its directory never made) is neither a pass nor a
failure: it is `skipped`, with why, and the rows that did look say what is missing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Check(BaseModel):
    """One check: its name, ✔, ✘ or – (skipped), what was run or read and found, the next step on ✘."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    skipped: bool = False

    @classmethod
    def skip(cls, name: str, why: str) -> Check:
        """A row that could gather no evidence: not passed (ok is False), not failed."""
        return cls(name=name, ok=False, skipped=True, detail=f"skipped: {why}")

    @property
    def failed(self) -> bool:
        return not self.ok and not self.skipped

    def render(self) -> str:
        mark = "–" if self.skipped else "✔" if self.ok else "✘"
        line = f"{mark} {self.name}: {self.detail}"
        return line + (f"\n    next: {self.fix}" if self.failed and self.fix else "")
