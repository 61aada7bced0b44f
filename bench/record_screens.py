"""Re-record the golden screen captures from the REAL clients in a private lab (from a checkout).

    .venv/bin/python -m bench.record_screens [--out tests/agents/screens/captures] [--only claude-code|codex]

The recorder is package code (relay_repl.lab.fidelity.screens, which `relay fidelity` runs from
an installed wheel); this only supplies the checkout's goldens folder as the default --out.
"""

from __future__ import annotations

import sys
from pathlib import Path

from relay_repl.lab.fidelity.screens import main as record

GOLDENS = Path(__file__).resolve().parents[1] / "tests" / "agents" / "screens" / "captures"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a == "--out" or a.startswith("--out=") for a in argv):
        argv = ["--out", str(GOLDENS), *argv]
    return record(argv)


if __name__ == "__main__":
    sys.exit(main())
