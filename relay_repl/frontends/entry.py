"""The `relay` console script: starts the Claude listing before anything else is imported.

`relay targets` is a cold start measured against `claude agents --json` alone, and it runs
that very listing: every millisecond between exec and the listing's spawn is added to the
ratio. Importing `frontends/cli.py` first (argparse, typing, the core text helpers) put
~10 ms (several times that on a loaded machine) in front of the spawn; here only
`system/prefetch.py` (standard library) comes first, and the CLI's imports overlap the listing.
Then, before pydantic builds its first model, its plugin lookup is swapped for one that does
not import `importlib.metadata` (system/pydantic_plugins.py).

Bare `relay` (no word at all) is the REPL, whose start is measured against a bare ptpython:
it goes straight to frontends/repl.py, without the CLI module (argparse and the ~20 command
modules it registers, ~8% of the instructions to the prompt, none of which the REPL uses).
Its errors still end it the CLI's way (`cli.exit_code`, imported only then).

`relay mcp` (exactly that argv: an agent's client starts it and waits for its `initialize`
answer under a deadline) skips the CLI entirely too: parsing every subcommand's options costs
more than the server's whole answer (session/mcp_server.py).
"""

from __future__ import annotations

import sys


def main() -> int:
    words = sys.argv[1:]
    if not words:
        return _bare_repl()
    if words == ["mcp"]:
        from relay_repl.frontends.commands.mcp import cmd_mcp

        return cmd_mcp(None)
    import relay_repl.system.prefetch as prefetch

    if prefetch.wanted(words):
        prefetch.start()
    import relay_repl.system.pydantic_plugins as pydantic_plugins

    pydantic_plugins.install()
    from relay_repl.frontends.cli import main as cli_main

    return cli_main()


def _bare_repl() -> int:
    """`relay` with no arguments: the REPL, as `relay repl` runs it."""
    import relay_repl.system.pydantic_plugins as pydantic_plugins

    pydantic_plugins.install()  # the session built after the prompt makes pydantic models
    from relay_repl.frontends.repl import run

    try:
        return run(fake=False)
    except (Exception, KeyboardInterrupt, BaseExceptionGroup) as exc:  # noqa: BLE001 - anything not relay's is raised again
        from relay_repl.frontends.cli import exit_code

        return exit_code(exc)
