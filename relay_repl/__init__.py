"""relay_repl: relay one-line messages between live AI coding-agent sessions.

Kept import-light on purpose: `relay` must reach its first prompt about as fast
as a bare ptpython, so nothing heavy is imported here.
"""

__version__ = "0.1.0"
