"""Starting the stub model server (relay_repl.lab.stubs) and adding a session to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from relay_repl.core.errors import LabError
from relay_repl.system.polling import poll_until_sync


from relay_repl.lab.layout import Layout
from relay_repl.lab.state import StubInfo, StubSession
from relay_repl.lab.labenv import NETNS, Progress, lab_env, package_root
from relay_repl.lab.panes import tail

STUB_READY_TIMEOUT = 20.0


def _stub_env(lay: Layout) -> dict[str, str]:
    env = lab_env(lay)
    env["PYTHONPATH"] = package_root()
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_stub(lay: Layout, netns: bool, progress: Progress) -> StubInfo:
    log = lay.logs / "stubs.log"
    py = sys.executable
    cmd = [py, "-m", "relay_repl.lab.stubs", "--control", str(lay.stub_control),
           "--ready-file", str(lay.stub_ready)]
    if netns:
        cmd = [py, NETNS, "--unshare", "--", *cmd]
    with open(log, "ab") as fh:
        try:
            proc = subprocess.Popen(cmd, env=_stub_env(lay), cwd=lay.root, stdin=subprocess.DEVNULL,
                                    stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            raise LabError(f"cannot start the stub server: {exc}") from exc

    def ready_file() -> dict | None:
        if lay.stub_ready.exists():
            try:
                return json.loads(lay.stub_ready.read_text())
            except (OSError, ValueError):
                pass
        if proc.poll() is not None:
            raise LabError(f"stub server exited with {proc.returncode}: {tail(_read(log), 2)} (log {log})")
        return None

    ready = poll_until_sync(ready_file, timeout=STUB_READY_TIMEOUT, interval=0.05)
    if ready is None:
        proc.kill()
        raise LabError(f"stub server not ready after {STUB_READY_TIMEOUT:g}s (log {log})")
    # Popen is not waited on: the stub outlives this process and `down` ends it.
    proc.returncode = 0  # silence ResourceWarning on interpreter exit
    pid = int(ready.get("pid") or proc.pid)
    progress(f"stub server up (pid {pid}{', private netns' if netns else ''})")
    return StubInfo(pid=pid, control=str(lay.stub_control), ready_file=str(lay.stub_ready),
                    log=str(log), alive=True)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def stub_add_session(control: str, name: str, api: str) -> StubSession:
    try:
        from relay_repl.lab.stubs.client import SyncStubClient

        info = SyncStubClient(control).add_session(name, api)
        return StubSession.model_validate(info.model_dump())
    except ImportError:
        pass
    import asyncio

    import aiohttp

    async def go() -> dict:
        async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=control)) as http:
            async with http.post("http://stub/sessions", json={"name": name, "api": api}) as resp:
                if resp.status >= 400:
                    raise LabError(f"stub refused session {name}: HTTP {resp.status} {await resp.text()}")
                return await resp.json()

    try:
        return StubSession.model_validate(asyncio.run(go()))
    except (aiohttp.ClientError, OSError) as exc:
        raise LabError(f"stub control socket {control} not reachable: {exc}") from exc

