"""The stub model server (lab/stubs/server.py) as the fast tests hold it: started in-process
on a UNIX control socket in a short private dir, with the real control client beside it.

Shared by the stub tests of each API (tests/lab/test_stub_server.py, test_stub_google.py);
tests/lab/conftest.py offers its fixtures there: ask for `stub` to get `(server, client)`
(async, on the asyncio backend tests/conftest.py sets for every test)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from relay_repl.lab.stubs.client import StubClient
from relay_repl.lab.stubs.server import StubServer

__all__ = ["sockdir", "stub"]


@pytest.fixture
def sockdir() -> Iterator[Path]:
    """A short private dir under /tmp: UNIX socket paths must stay under 108 bytes."""
    d = Path(tempfile.mkdtemp(prefix="stubt-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
async def stub(sockdir: Path) -> AsyncIterator[tuple[StubServer, StubClient]]:
    """A started stub server and a control client on its socket; both closed afterwards."""
    server = StubServer()
    await server.start(str(sockdir / "ctl.sock"))
    client = StubClient(sockdir / "ctl.sock", timeout=5)
    try:
        yield server, client
    finally:
        await client.close()
        await server.close()
