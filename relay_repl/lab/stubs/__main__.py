"""`python -m relay_repl.lab.stubs --control SOCK [--ready-file FILE]`: run the stub server.

Exits 0 after SIGTERM/SIGINT (socket removed); exits 1 with one line on stderr when the
control socket cannot be bound (e.g. another live stub owns it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from relay_repl.lab.stubs.server import serve


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m relay_repl.lab.stubs", description=__doc__.splitlines()[0])
    ap.add_argument("--control", required=True, help="absolute path of the control UNIX socket to create")
    ap.add_argument("--ready-file", help="write {pid, control} here (atomically) once listening")
    args = ap.parse_args(argv)
    if not os.path.isabs(args.control):
        print("stub: --control must be an absolute path", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(args.control, args.ready_file))
    except OSError as exc:
        print(f"stub: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
