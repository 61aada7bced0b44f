"""Shared fixtures: every test gets a private RELAY_HOME; async tests run on asyncio."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def relay_home(tmp_path, monkeypatch):
    home = tmp_path / "relay-home"
    monkeypatch.setenv("RELAY_HOME", str(home))
    return home


@pytest.fixture
def anyio_backend():
    return "asyncio"
