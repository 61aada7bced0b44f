"""What Tab and `dir()` show on a value the operator meets: relay's members, not pydantic's.

Why: every value that crosses a boundary is a pydantic model, and `dir()` of one lists the
deprecated v1 methods (`construct`, `dict`, `parse_obj`, `schema_json`, `update_forward_refs`,
...) and the `model_*` machinery beside the few names an operator wants (`m.text`, `d.wait_reply`,
`t.spec`); ptpython and jedi complete from `dir()`, so Tab on a message offered those first. A
value's class lists what it means; pydantic's methods stay callable, just not offered.
"""

from __future__ import annotations

from functools import cache


@cache
def relay_members(cls: type) -> tuple[str, ...]:
    """The public names `cls` and its relay base classes define (fields, properties, methods),
    sorted; nothing defined by pydantic or `object`, and no `model_*` machinery."""
    names: set[str] = set(getattr(cls, "model_fields", {}) or {})
    for klass in cls.__mro__:
        if klass is object or klass is Readable or klass.__module__.split(".")[0] in ("pydantic", "builtins"):
            continue
        names.update(vars(klass))
    return tuple(sorted(n for n in names if not n.startswith("_") and not n.startswith("model_")))


class Readable:
    """Mixin for the operator's values: `dir()` (and so Tab) is relay's members, then the plain dunders."""

    __slots__ = ()

    def __dir__(self) -> list[str]:
        cls: type = type(self)
        return [*relay_members(cls), *PLAIN_DUNDERS]


# the dunders every object has (pydantic's own, `__fields__` and `__pydantic_*__`, are left out)
PLAIN_DUNDERS = tuple(sorted({*dir(object), "__dict__", "__module__"}))
