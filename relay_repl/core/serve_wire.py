"""The `relay serve --stdio` protocol: one JSON request per line, one JSON answer per line.

Why its own versioned values: two relays of different releases meet over ssh, and a
silent misreading there would act on another machine; so every line carries `v`, and
a version the other side does not speak is refused with both versions named.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PROTOCOL_VERSION = 1
MAX_LINE = 8 * 1024 * 1024  # a targets listing or a plan with its payload fits with room


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


def mismatch(theirs: object, ours: int = PROTOCOL_VERSION, who: str = "the remote relay") -> str:
    return (f"relay serve protocol mismatch: this relay speaks version {ours}, {who} speaks version {theirs}; "
            "install the same relay release on both machines")


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
