"""The REPL's own completer (frontends/completion.py) against hostile session names."""

from __future__ import annotations

from types import SimpleNamespace

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from relay_repl.core.target import Target
from relay_repl.frontends.completion import RelayCompleter


def target(name: str) -> Target:
    return Target(kind="claude", name=name, address="a", pid=1, live=True, state="idle", transports=(),
                  identified_by="test")


def test_a_name_that_would_break_out_of_the_string_is_never_offered():
    """A session's name is what its registry record says. `session.send("cl<Tab>` completed
    `claude:x"); __import__("os").system("id") #` into the operator's own line, as code (old code
    offers it); a plain name is still offered."""
    hostile = ['x"); __import__("os").system("id") #', "y'+open('/etc/passwd').read()+'", "z\\\\", "w\x1b[2J",
               "v\u202e"]
    session = SimpleNamespace(_targets=[target(n) for n in [*hostile, "alpha"]], deliveries=[])
    got = [c.text for c in RelayCompleter(lambda: session).get_completions(
        Document('await session.send("cl'), CompleteEvent())]
    assert got == ["claude:alpha"], got
