"""Counting the descriptor links a verdict reads: how tests show a lookup stops early."""

from __future__ import annotations

import os
from typing import Any

import relay_repl.system.proc as proc


def fd_link_reads(monkeypatch: Any, pid: int) -> list[str]:
    """Every `/proc/<pid>/fd/N` link read through `system.proc` from here on (each read still runs)."""
    links: list[str] = []
    real = os.readlink

    def counted(path: Any, *args: Any, **kw: Any) -> str:
        if str(path).startswith(f"/proc/{pid}/fd/"):
            links.append(str(path))
        return real(path, *args, **kw)

    monkeypatch.setattr(proc.os, "readlink", counted)
    return links
