"""A `relay mcp` server as a real subprocess, spoken to line by line (the MCP tests' one pipe)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

WAIT = 30.0  # bound on any one answer; a quiet machine answers in well under a second


def relay_mcp_argv() -> list[str]:
    """The console script an agent's config names (`relay mcp`), else the module form."""
    script = Path(sys.executable).parent / "relay"
    return [str(script), "mcp"] if script.exists() else [sys.executable, "-m", "relay_repl", "mcp"]


class McpPipe:
    """`relay mcp` under test: write lines to its stdin, wait (bounded) for each answer line."""

    def __init__(self, env: dict[str, str] | None = None, argv: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(argv or relay_mcp_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
                                     cwd=Path(__file__).resolve().parents[2])
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, msg: Any) -> None:
        raw = msg if isinstance(msg, str) else json.dumps(msg)
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw.encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> dict[str, Any]:
        line = self.lines.get(timeout=WAIT)
        assert line, f"relay mcp closed its stdout; stderr: {self.stderr_text()}"
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        return json.loads(line)

    def ask(self, id: Any, method: str, params: Any = None) -> dict[str, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.recv()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=WAIT)
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()
        return rc

    def stderr_text(self) -> str:
        return self.stderr.decode(errors="replace")


def init_params(version: str = "2025-06-18") -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}
