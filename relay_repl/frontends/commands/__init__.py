"""The `relay` subcommands, one module per command: each registers its own subparser
(`register(sub)`) and holds its handler; `frontends/cli.py` lists them in COMMAND_NAMES."""
