"""Live: asking the REAL Gemini CLI its version writes nothing into any home.

`gemini --version` (0.61.0) writes `$GEMINI_CLI_HOME/.gemini/projects.json.<uuid>.tmp` and makes
`.gemini/`; `relay --lab doctor` and the installer ask it, so its kind's `version_env()` points that
home at one that cannot exist (as Codex's does for CODEX_HOME). Needs gemini in the lab clients.
"""

from __future__ import annotations

import os

import pytest

from relay_repl.agents import versions
from relay_repl.lab.install import lab_binary
from relay_repl.store import paths

pytestmark = pytest.mark.live
# where `relay lab install` put the pins, read at import: each test's own RELAY_HOME (autouse) would
# move the default under it, and this test skipped in every fresh-clone run ("no gemini in the lab clients")
CLIENTS = os.environ.get("RELAY_LAB_CLIENTS") or str(paths.clients_dir())


def test_version_of_the_real_gemini_writes_no_file(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAY_LAB_CLIENTS", CLIENTS)
    exe = lab_binary("gemini-cli")
    if not exe.exists():
        pytest.skip(f"no gemini in the lab clients ({exe}): relay lab install")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))  # where it would write, were it not pointed away
    versions.clear_cache()
    assert versions.client_version("gemini-cli", exe) == "0.61.0"
    assert sorted(p.name for p in home.rglob("*")) == []
