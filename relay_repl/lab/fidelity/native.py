"""Fidelity checks: each kind's native transports (the socket, message and queue transports its
adapter offers) against the real clients, in a lab with the sessions every kind's fidelity module
asks for (`LAB_COUNTS["native"]`).

The checks are the kinds' own (`NATIVE_CHECKS` in agents/<kind>/fidelity.py): what a native
transport does is a fact about one client. This module hands them the running lab as a
`NativeLab` (agents may not import the lab) and never names a kind. Package code, so `relay
fidelity` runs them from an installed wheel; the live tests (tests/transports/test_native_live.py,
test_claude_message_live.py) call these same checks by name. A check raises AssertionError when
its fact does not hold.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
from relay_repl.lab.fidelity.kinds import kind_checks
from relay_repl.agents.fidelity import NativeLab, main_texts
from relay_repl.lab.sessions import live_session
from relay_repl.lab.stubs.client import StubClient

__all__ = ["CHECKS", "LabNative", "main_texts"]


class LabNative:
    """The running lab as a kind's native checks see it (`agents.fidelity.NativeLab`)."""

    def session(self, answers: list[bool]) -> Any:
        return live_session(answers)

    @asynccontextmanager
    async def stub(self) -> AsyncIterator[StubClient]:
        st = launcher.status()
        assert st is not None, "no lab"
        async with StubClient(st.stub.control) as client:
            yield client

    async def make_busy(self, name: str, seconds: float) -> None:
        await anyio.to_thread.run_sync(lambda: helpers.make_busy(name, seconds))

    async def wait_idle(self, name: str, timeout: float = 60.0) -> None:
        await anyio.to_thread.run_sync(lambda: helpers.wait_idle(name, timeout=timeout))


def _bound(check: Callable[[NativeLab], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    return lambda: check(LabNative())


CHECKS = kind_checks("NATIVE_CHECKS", _bound)
