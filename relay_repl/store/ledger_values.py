"""The ledger's row values (`Event`, `Halt`), apart from store/ledger.py.

Why apart: `relay reply` opens the ledger to check the id it answers and to record its reply,
and builds neither (a halt in force only ends it); importing pydantic for these two models was
most of that process's start (issue 33). store/ledger.py builds them on first use."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int
    at: float
    kind: str
    delivery: str | None
    relay_id: str | None
    data: dict[str, Any]


class Halt(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int
    at: float
    reason: str
    by: str
