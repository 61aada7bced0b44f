"""The `relay serve --stdio` protocol: one JSON request per line, one JSON answer per line.

Why its own versioned values: two relays of different releases meet over ssh, and a
silent misreading there would act on another machine; so every line carries `v`, and
a version the other side does not speak is refused with both versions named.

The constants, the mismatch refusal and the plain line readers live in core/serve_lines.py, which
`relay serve --stdio` answers with before these models are built (issue 33).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.serve_lines import MAX_LINE as MAX_LINE, PROTOCOL_VERSION as PROTOCOL_VERSION
from relay_repl.core.serve_lines import mismatch as mismatch


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    v: int = PROTOCOL_VERSION
    id: int
    op: str
    args: dict[str, Any] = Field(default_factory=dict)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    v: int = PROTOCOL_VERSION
    id: int | None
    ok: bool
    result: Any = None
    error: str | None = None
    error_kind: str | None = Field(default=None, description="the RelayError subclass name on the serving side")
    ask: dict[str, Any] | None = Field(default=None, description="not the final answer: the serving relay asks the "
                                       "operator's gate about a plan ({plan, digest}); the caller answers with a request "
                                       "of the same id, op `approve`, args {digest: the approved digest or null}")


# ---- what each op's result must look like (a host's frame of another shape is not read) ----------


class HelloResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    protocol: int
    relay: str
    pid: int
    hostname: str | None = None


class WaitReplyResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    message: dict[str, Any] | None = None
    judged_on: str | None = None
    serve_pid: int | None = None


class EvidenceResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    relay_id: str
    serve_pid: int | None = None
    planned: bool = False
    approved: bool = False
    state: str | None = None
    stage: str | None = None
    sent: int = 0


class HaltResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    halted: bool
