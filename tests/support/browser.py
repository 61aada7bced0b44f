"""Headless Chromium for the tests: render a file, take a screenshot (Debian's `chromium`,
installed by scripts/bootstrap)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--force-device-scale-factor=1"]


def chromium() -> str | None:
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


def screenshot(page: Path, png: Path, width: int, height: int, timeout: float = 60.0) -> subprocess.CompletedProcess:
    exe = chromium()
    assert exe, "chromium is missing: run ./scripts/bootstrap as root (it installs Debian's chromium)"
    with tempfile.TemporaryDirectory(prefix="relay-chromium-") as profile:
        res = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                              f"--screenshot={png}", page.resolve().as_uri()],
                             capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert png.exists(), f"chromium wrote no screenshot (exit {res.returncode}): {res.stderr[-800:]}"
    return res
