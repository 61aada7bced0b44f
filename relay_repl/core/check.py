"""One `relay doctor` row: a value every layer can produce (the agent kinds add their own rows)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Check(BaseModel):
    """One check: its name, ✔ or ✘, what was found, and the next step when it failed."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def render(self) -> str:
        line = f"{'✔' if self.ok else '✘'} {self.name}: {self.detail}"
        return line + (f"\n    next: {self.fix}" if not self.ok and self.fix else "")
