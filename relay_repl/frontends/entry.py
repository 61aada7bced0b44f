"""The `relay` console script: starts the Claude listing before anything else is imported.

`relay targets` is a cold start measured against `claude agents --json` alone, and it runs
that very listing: every millisecond between exec and the listing's spawn is added to the
ratio. Importing `frontends/cli.py` first (argparse, typing, the core text helpers) put
~10 ms (several times that on a loaded machine) in front of the spawn; here only
`system/prefetch.py` (standard library) comes first, and the CLI's imports overlap the listing.
Then, before pydantic builds its first model, its plugin lookup is swapped for one that does
not import `importlib.metadata` (system/pydantic_plugins.py).
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:] == ["mcp"]:
        from relay_repl.frontends.commands.mcp import cmd_mcp

        return cmd_mcp(None)
    import relay_repl.system.prefetch as prefetch

    if prefetch.wanted(sys.argv[1:]):
        prefetch.start()
    import relay_repl.system.pydantic_plugins as pydantic_plugins

    pydantic_plugins.install()
    from relay_repl.frontends.cli import main as cli_main

    return cli_main()
