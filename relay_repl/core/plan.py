"""The four-part plan shown before every side effect (seed section 4).

A plan is a value, not a print statement: the gate asks y/N on it, the ledger
stores it, and tests compare it. It says four things, exactly:
1. the resolved target and what identified it,
2. the transport and its fallback,
3. the exact payload,
4. what counts as delivered.
"""

from __future__ import annotations

import textwrap

from pydantic import BaseModel, ConfigDict, Field


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str = Field(description="What will happen, in a few words, e.g. 'send', 'register inbox'.")
    target: str = Field(description="The resolved target, e.g. 'claude-code:alpha (pid 5694)'.")
    identified_by: str = Field(description="What evidence resolved it.")
    transport: str
    fallback: str = Field(default="none", description="What would be used instead, or 'none'.")
    payload: str = Field(description="The exact bytes that will be typed, written or queued.")
    delivered_when: str = Field(description="The receiver evidence that will count as delivered.")
    notes: tuple[str, ...] = Field(default=(), description="Warnings the operator should weigh (goal thread, busy target...).")
    files: tuple[str, ...] = Field(default=(), description="Every file the side effect creates or replaces, and why.")
    relay_id: str | None = None
    heading: str | None = Field(default=None, description="Where this send stands, e.g. 'recipe review, run R, round 2/5, "
                                "step 1: ask claude:alpha'; printed above the plan")

    def render(self, width: int = 100) -> str:
        """Plain text, one labelled block per part; the payload is shown verbatim."""

        def block(label: str, text: str) -> str:
            wrapped = textwrap.wrap(text, width=width - 16) or [""]
            first, *rest = wrapped
            return "\n".join([f"  {label:<13} {first}"] + [f"  {'':<13} {r}" for r in rest])

        head = f"Plan: {self.action}" + (f"  (relay id {self.relay_id})" if self.relay_id else "")
        lines = [
            *([self.heading] if self.heading else []),
            head,
            block("1 target", f"{self.target} — identified by {self.identified_by}"),
            block("2 transport", f"{self.transport}; fallback: {self.fallback}"),
            # The payload is never wrapped or trimmed: the operator approves the exact bytes.
            f"  {'3 payload':<13} {self.payload}",
            block("4 delivered", self.delivered_when),
        ]
        lines += [block("  files", f) for f in self.files]
        lines += [block("! note", n) for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()
