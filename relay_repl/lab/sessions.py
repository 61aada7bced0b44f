"""A real session with its inbox open, for the live checks (`relay fidelity`) and the live tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from relay_repl.session.app import make_session
from relay_repl.session.core.gate import ScriptedGate


@asynccontextmanager
async def live_session(answers: Iterable[bool] = ()) -> AsyncIterator[tuple[Any, ScriptedGate, Any]]:
    """(session, gate, inbox): discovery done, the gate answering `answers` then No."""
    gate = ScriptedGate(answers)
    lines: list[str] = []
    s = make_session(approve=gate, echo=lines.append)
    async with anyio.create_task_group() as tg:
        inbox = await s.open_inbox(tg, echo=lines.append)
        await s.refresh()
        try:
            yield s, gate, inbox
        finally:
            await s.close_inbox()
            tg.cancel_scope.cancel()
