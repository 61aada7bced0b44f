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
more than the server's whole answer (session/mcp/mcp_server.py).

`relay reply ID TEXT...` (a Codex agent's answer, one process start each), `relay ask TARGET BODY...`
(an agent's shell asking the operator) and `relay serve --stdio`
(a host's relay, started per ssh channel) skip the CLI's parser too (issue 33): with any other
words (an option, `--help`, a leading `--fake`) the CLI parses them, so usage and errors are its own.

`relay send TARGET MESSAGE` in its bare shape prints its plan before the models are loaded, then
runs the CLI's `send` with that plan's id and digest (frontends/send_plain.py, issue 40); any other
shape, or anything its plain readers do not answer exactly, is the CLI's as before. So does
`relay run NAME -p KEY=VALUE` (frontends/run_plain.py): the run's first plan, then the CLI's `run`
with that plan's run id, relay id and digest.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable


PAUSE_GC = ("send", "run", "serve")
"""Commands whose first plan is waited for (goal <= 200 ms, bench/oneliners.py; `relay serve --stdio`:
a host's first send, awaited by the operator's relay on a cold channel, bench/hosts.py): cyclic garbage
collection is paused from here until that plan is shown (system/startup_gc.py)."""


def main() -> int:
    words = sys.argv[1:]
    if not words:
        return _bare_repl()
    if words == ["mcp"]:
        from relay_repl.frontends.commands.mcp import cmd_mcp

        return cmd_mcp(None)
    if words[0] in PAUSE_GC and gc.isenabled():  # one-liners waited on up to their first plan (system/startup_gc.py)
        gc.disable()  # before any import: compiling a module from source allocates too
        from relay_repl.system.startup_gc import paused_here

        paused_here()
    import relay_repl.system.prefetch as prefetch

    if prefetch.wanted(words):
        prefetch.start()
    import relay_repl.system.pydantic_plugins as pydantic_plugins

    pydantic_plugins.install()
    if words[0] == "reply":  # one process start per answer a Codex agent gives: no parser of every command
        from relay_repl.frontends.commands.reply import plain_words, run_words

        if plain_words(words[1:]):
            return _as_cli(lambda: run_words(words[1:]))
    if words[0] == "ask":  # an agent's shell asking the operator: one process start each, no parser either
        from relay_repl.frontends.commands.ask import plain_words as plain_ask, run_words as run_ask

        if plain_ask(words[1:]):
            return _as_cli(lambda: run_ask(words[1:]))
    if words[0] in ("send", "run"):  # its first plan before the models, in the bare shape only
        if words[0] == "send":  # frontends/send_plain.py
            from relay_repl.frontends.send_plain import run as first_plan_early
        else:  # frontends/run_plain.py
            from relay_repl.frontends.run_plain import run as first_plan_early

        try:
            code = first_plan_early(words)
        except KeyboardInterrupt as exc:  # Ctrl-C while its plan is read, before the CLI's own handler runs
            from relay_repl.frontends.cli import exit_code

            return exit_code(exc)
        if code is not None:
            return code
    if words == ["serve", "--stdio"]:  # a host's relay, started per ssh channel: its first answer is awaited
        from relay_repl.frontends.commands.serve import run_plain
        from relay_repl.frontends.send_plain import reply_route_soon

        return _as_cli(lambda: run_plain(soon=reply_route_soon))
    from relay_repl.frontends.cli import main as cli_main

    return cli_main()


def _as_cli(run: Callable[[], int]) -> int:
    """`run()` as `cli.main` runs a command: stdout flushed inside, so a reader that left early is
    caught here; a relay error, Ctrl-C or a task group holding one ends it with its one line."""
    from relay_repl.core.errors import RelayError

    try:
        code = run()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        from relay_repl.frontends.commands.common import closed_pipe

        return closed_pipe()
    except (RelayError, BaseExceptionGroup, KeyboardInterrupt) as exc:
        from relay_repl.frontends.cli import exit_code

        return exit_code(exc)


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
