"""Help texts that enumerate the agent kinds, filled from the registry when help is printed.

A help text that lists the kinds by hand goes stale with the next kind (`relay doctor --help`
named Claude and Codex long after Gemini CLI was registered). Building the parser must stay cheap,
though: loading every kind's package is a cold start (0.2-1 s) that `relay targets` must not pay
for help it never prints (frontends/commands/lab.py). So a help text names the list with a field
and these formatters fill it only when argparse formats help; the kinds' packages are imported then,
and no client is run. A field a text does not use costs nothing; unknown braces are left as written.

Fields: {kinds} (their labels), {lab_kinds} (the kinds the lab runs), {binaries} (their clients'
executables), {kind_flags} (`relay lab` flags, e.g. --claude/--codex), {targets} (an address per
kind, e.g. claude:NAME), {transports} (every transport a kind offers), {kernel_kinds} and
{unproven_kinds} (kinds whose records carry kernel-supplied provenance, and those that keep none),
{mcp_setup} (each kind's lines telling its client to start `relay mcp`, indented, one kind after another).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

_FIELD = re.compile(r"\{(\w+)\}")


def _fields() -> dict[str, Callable[[], str]]:
    from relay_repl.agents import registry

    def lab() -> list:
        return [k for k in registry.kinds() if k.lab_driver() is not None]

    def labels(ks: object) -> str:
        return ", ".join(k.facts.label for k in ks) or "none"  # type: ignore[attr-defined]

    def transports() -> str:
        seen = dict.fromkeys(t.name for k in registry.kinds() for t in k.transports.specs())
        return ", ".join(seen)

    return {
        "kinds": lambda: labels(registry.kinds()),
        "lab_kinds": lambda: labels(lab()),
        "binaries": lambda: ", ".join(k.facts.pin().binary for k in registry.kinds()),
        "kind_flags": lambda: "/".join(f"--{d.spec.count_flag}" for k in lab() if (d := k.lab_driver()) is not None),
        "targets": lambda: ", ".join(f"{k.facts.prefix}:NAME" for k in registry.kinds()),
        "transports": transports,
        "kernel_kinds": lambda: labels(k for k in registry.kinds() if k.checks.provenance == "kernel"),
        "unproven_kinds": lambda: labels(k for k in registry.kinds() if k.checks.provenance != "kernel"),
        "mcp_setup": lambda: "\n".join(f"  {line}" for k in registry.kinds() for line in k.facts.mcp_setup),
    }


def fill(text: str) -> str:
    """`text` with its kind fields filled from the registry (only those it names are computed)."""
    if "{" not in text:
        return text
    fields = _fields()
    return _FIELD.sub(lambda m: fields[m.group(1)]() if m.group(1) in fields else m.group(0), text)


class _Fill(argparse.HelpFormatter):
    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and isinstance(action, argparse._SubParsersAction):
            # argparse measures the subcommands at the section's indent, but prints them one step in: a
            # 10-letter name (`completion`) then wrapped its help onto the next line
            names = [len(self._format_action_invocation(a)) for a in action._get_subactions()]
            self._action_max_length = max(self._action_max_length,
                                          max(names, default=0) + self._current_indent + self._indent_increment)

    def _format_text(self, text: str) -> str:
        return super()._format_text(fill(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return fill(super()._expand_help(action))


class KindsHelp(_Fill, argparse.HelpFormatter):
    """argparse's default formatter (text re-wrapped), with the kind fields filled."""


class KindsRawHelp(_Fill, argparse.RawDescriptionHelpFormatter):
    """The description as written (its line breaks kept), with the kind fields filled."""
