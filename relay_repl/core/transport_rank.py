"""The transport ranking's rules over plain flags: strength, the plain send's fallback words, the
never-idle note. Standard library only.

Why apart from transports/ranking.py: `relay send`'s plain pre-plan (issue 40) chooses the transport
it shows before pydantic is loaded, and must choose exactly as `ranking.choose` does. The rules and
their words live here once; `ranking.choose` (over `Capabilities` and `Transport`s) calls them, and
the plain choice (agents/plain_choice.py, over an adapter's declared flags) calls them too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

FLAGS = ("durable", "native_reply", "receipts", "live_only", "same_uid_only", "needs_pane")
"""`transports.base.Capabilities`' fields, in its order (a test holds the two equal)."""


def strength(flags: Mapping[str, bool]) -> tuple[int, ...]:
    """Higher sorts first: durable beats live-only, native replies beat bare
    writes, receipts beat silence, and typing into a pane comes last because it
    is the easiest to get wrong."""
    f = {k: bool(flags.get(k, False)) for k in FLAGS}
    return (int(f["durable"]), int(f["native_reply"]), int(f["receipts"]), int(not f["needs_pane"]),
            int(not f["live_only"]))


def plain_fallback(names: Sequence[str]) -> str:
    """What a plain send falls back to (`names`: the usable transports, strongest first): nothing,
    and the plan says so (issue 16 case 9).

    A plain send runs only the chosen transport; only an explicit chain (`a | b`) tries the
    next one after a refusal with no side effect. The plan names the runner-up and the
    chain that would try it, so the operator who wants a fallback can compose one."""
    if len(names) < 2:
        return "none"
    first, second = (n.replace("-", "_") for n in names[:2])
    return (f"none (a plain send uses one transport; {names[1]} would also work: "
            f"transport=session.transports.{first} | session.transports.{second} tries it next)")


def never_idle_note(spec: str) -> str:
    """The note of a target that never goes idle: only a durable transport is then ranked."""
    return f"{spec} never goes idle (goal controller): only a durable transport can deliver without waiting"
