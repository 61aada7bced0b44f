"""The task groups the REPL runs beside its prompt (frontends/repl.beside): a failed task ends its
group once, is said once, and the group opens again when asked; the end of the REPL ends it."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from relay_repl.frontends.repl import beside, said_session_failed, said_tg_failed
from relay_repl.core.errors import LedgerError

pytestmark = pytest.mark.anyio


async def test_a_failed_task_is_said_once_and_the_group_is_opened_again() -> None:
    done = asyncio.Event()
    groups: list[object] = []
    said: list[BaseException] = []

    def fill(group: object) -> None:
        groups.append(group)

    def say(exc: BaseException) -> bool:
        said.append(exc)
        return True

    task = asyncio.create_task(beside(done, fill, say))
    await anyio.wait_all_tasks_blocked()
    groups[0].start_soon(anyio.sleep, "x")  # type: ignore[attr-defined]
    for _ in range(100):
        if len(groups) == 2:
            break
        await asyncio.sleep(0.01)
    assert len(groups) == 2 and len(said) == 1
    assert isinstance(said[0], BaseExceptionGroup) and isinstance(said[0].exceptions[0], TypeError)
    done.set()
    await asyncio.wait_for(task, 5)
    assert len(said) == 1


async def test_a_group_not_opened_again_stays_closed_and_the_end_still_comes() -> None:
    done = asyncio.Event()
    opened: list[object] = []

    def fill(group: object) -> None:
        opened.append(group)
        if len(opened) == 1:
            group.start_soon(anyio.sleep, "x")  # type: ignore[attr-defined]

    await asyncio.wait_for(beside(done, fill, lambda exc: False), 5)
    assert len(opened) == 1


def test_what_the_operator_reads_when_tg_or_the_session_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert said_tg_failed(BaseExceptionGroup("g", [ValueError("bad \x1b[31m value")])) is True
    out = capsys.readouterr().out
    assert "ValueError: bad \\x1b[31m value" in out and "\x1b" not in out
    assert out.rstrip().endswith("`tg` is a new task group now and the REPL goes on")

    assert said_session_failed(BaseExceptionGroup("g", [LedgerError("the ledger is gone; restore it")])) is False
    out = capsys.readouterr().out
    assert out.startswith("relay: the session's background work stopped: the ledger is gone; restore it.")
    assert "start relay again" in out and "Traceback" not in out
    said_session_failed(BaseExceptionGroup("g", [OSError(5, "Input/output error")]))
    assert "system error while preparing the session or serving its inbox: Input/output error" in capsys.readouterr().out
