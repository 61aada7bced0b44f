"""A recipe: the operator's own multi-round goal, written down (issue 9).

Why a file format and not a script: the runner must be able to show every plan
before anything happens (`--dry-run`), refuse a bad file before round 1 rather
than in round 3, and resume a stopped run from the ledger. So a recipe is data,
validated by these pydantic models, and its bodies are templates whose names
are all checked when the file is loaded.

    name = "review"
    description = "a writer and a reviewer, until the reviewer says LGTM"
    rounds = 5                 # at most this many rounds
    until = "LGTM"             # ... stopping early once a reply contains this
    until_reply = "reviewer"   # (optional) only that step's reply counts

    [params.writer]
    type = "target"
    default = "codex:beta"

    [[steps]]
    kind = "ask"               # ask (want=reply), tell (want=ack|none), forward
    to = "{writer}"
    body = "round {round}/{rounds}: {task}. Last review: {reply.reviewer}"

Template names: every parameter, `{round}`, `{rounds}`, `{run}`, `{last}` (the
newest reply of the run) and `{reply.NAME}` (the newest reply of the ask/tell
step named NAME; a step is named by `name`, else by the parameter in its `to`).
`{{` and `}}` are literal braces.

Pure: imports nothing above core.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from relay_repl.core import file_shape, recipe_text
from relay_repl.core.errors import FileProblem, UsageError

ParamType = Literal["text", "target", "targets", "int"]
BUILTINS = recipe_text.BUILTINS
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class RecipeError(UsageError):
    """A recipe file, a parameter or a template is wrong: one line, exit 2."""


class RecipeFileProblem(FileProblem, RecipeError):
    """The recipe file itself cannot be read or is not a recipe: `FILE: what is wrong (line L): what to do`."""


FIX = "edit the recipe (`relay recipes schema` prints the format, recipes/README.md explains it)"


# -- templates -----------------------------------------------------------------
# their one home is core/recipe_text.py (standard library: a plain pre-plan of `relay run` fills them too)
template_names = recipe_text.template_names


def render(template: str, values: dict[str, str]) -> str:
    """Fill a template checked at load time; a name missing now is a bug, not a guess."""
    try:
        return recipe_text.render(template, values)
    except recipe_text.MissingName as exc:
        raise RecipeError(str(exc)) from None


# -- the model -------------------------------------------------------------------
class Param(BaseModel):
    """One typed parameter: `text`, `int`, `target` (claude:alpha) or `targets`
    (a comma-separated list, or `all` for every live target)."""

    model_config = ConfigDict(extra="forbid")

    type: ParamType = "text"
    default: str | int | list[str] | None = Field(default=None, description="Used when the run does not set it; none means required")
    description: str = ""

    def coerce(self, name: str, value: Any) -> Any:
        """A value from the command line (a string) or the REPL (any type), checked."""
        if self.type == "int":
            try:
                return int(value)
            except (TypeError, ValueError):
                raise RecipeError(f"parameter {name} must be a whole number, not {value!r}") from None
        if self.type == "targets":
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            items = [str(v).strip() for v in items if str(v).strip()]
            if not items:
                raise RecipeError(f"parameter {name} needs at least one target (or `all`)")
            return items
        text = str(value)
        if "\n" in text or "\r" in text:
            raise RecipeError(f"parameter {name} must be one line (a relay message is one line)")
        if self.type == "target" and ":" not in text and not text.startswith("%"):
            raise RecipeError(f"parameter {name}={text!r} is not a target: name one like claude:alpha or codex:beta")
        return text


class Step(BaseModel):
    """One step of a round."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["ask", "tell", "forward"] = Field(description="ask: want=reply and wait for the linked reply; "
                                                    "tell: want=ack (waits for the ack) or none; forward: pass the "
                                                    "newest reply on, same id, hop + 1")
    to: str = Field(description="A target (claude:alpha) or one parameter of type target/targets: {writer}")
    body: str | None = Field(default=None, description="Template; required for ask and tell, not allowed for forward")
    name: str | None = Field(default=None, description="Names this step's reply for {reply.NAME}; default: the parameter in `to`")
    want: Literal["reply", "ack", "none"] | None = Field(default=None, description="tell: ack or none (default none)")
    timeout: float = Field(default=120.0, gt=0, le=3600, description="Seconds to wait for delivery and the answer")
    transport: str | None = Field(default=None, description="Require this transport")

    @model_validator(mode="after")
    def _shape(self) -> Step:
        if self.kind in ("ask", "tell") and not self.body:
            raise ValueError(f"a {self.kind} step needs a body")
        if self.kind == "forward" and self.body is not None:
            raise ValueError("a forward step passes the newest reply on unchanged: it takes no body")
        if self.kind == "ask" and self.want not in (None, "reply"):
            raise ValueError("an ask step always wants a reply (use tell for ack or none)")
        if self.kind == "tell" and self.want == "reply":
            raise ValueError("a tell step wants ack or none (use ask to wait for a reply)")
        if self.name is not None and not NAME.match(self.name):
            raise ValueError(f"step name {self.name!r} must be letters, digits, _ or -")
        return self

    @property
    def wants(self) -> Literal["reply", "ack", "none"]:
        if self.kind == "ask":
            return "reply"
        return self.want or "none"

    @property
    def waits_for_answer(self) -> bool:
        return self.wants in ("reply", "ack") and self.kind != "forward"

    @property
    def to_param(self) -> str | None:
        """`writer` for `to = "{writer}"`, else None (a literal target)."""
        m = re.fullmatch(r"\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}", self.to.strip())
        return m.group(1) if m else None

    @property
    def reply_name(self) -> str | None:
        return self.name or self.to_param


class Recipe(BaseModel):
    """A saved multi-round exchange. Every round runs the same steps in order; the
    runner (the initiator) resets hop to 0 at the start of each round."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="What `relay run NAME` finds")
    description: str = ""
    params: dict[str, Param] = Field(default_factory=dict)
    rounds: int = Field(default=1, ge=1, le=100, description="How many rounds at most")
    until: str | None = Field(default=None, description="Stop after the round in which a reply contains this text")
    until_reply: str | None = Field(default=None, description="Only this step's reply is checked for `until`")
    steps: list[Step] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME.match(v):
            raise ValueError(f"recipe name {v!r} must be letters, digits, _ or -")
        return v

    @field_validator("params")
    @classmethod
    def _param_names(cls, v: dict[str, Param]) -> dict[str, Param]:
        for k in v:
            if not NAME.match(k) or k in BUILTINS or k == "reply":
                raise ValueError(f"parameter name {k!r} is not allowed (letters, digits, _; not {', '.join(BUILTINS)}, reply)")
        return v

    @model_validator(mode="after")
    def _templates(self) -> Recipe:
        replies = self.reply_names
        for i, step in enumerate(self.steps, 1):
            where = f"steps[{i}]"
            p = step.to_param
            if p is not None:
                if p not in self.params:
                    raise ValueError(f"{where}.to names {{{p}}}, which is not a parameter (known: {', '.join(self.params) or 'none'})")
                if self.params[p].type not in ("target", "targets"):
                    raise ValueError(f"{where}.to names {{{p}}}, a {self.params[p].type} parameter: make it type target or targets")
            elif "{" in step.to or ":" not in step.to and not step.to.startswith("%"):
                raise ValueError(f"{where}.to = {step.to!r}: name a target (claude:alpha) or one target parameter ({{writer}})")
            if step.kind == "forward" and not any(s.waits_for_answer for s in self.steps):
                raise ValueError(f"{where} forwards the newest reply, but no step waits for one")
            for name in template_names(step.body or ""):
                self._check_name(name, replies, where)
        if self.until_reply is not None and self.until_reply not in replies:
            raise ValueError(f"until_reply names {self.until_reply!r}, which no ask/tell step answers (known: {', '.join(replies) or 'none'})")
        if self.until_reply is not None and self.until is None:
            raise ValueError("until_reply needs until (the text the reply must contain)")
        return self

    def _check_name(self, name: str, replies: list[str], where: str) -> None:
        if name.startswith("reply."):
            r = name[len("reply."):]
            if r not in replies:
                raise ValueError(f"{where}.body names {{{name}}}, an unknown reply (known: "
                                 f"{', '.join('reply.' + x for x in replies) or 'none: no step waits for a reply'})")
            return
        if name in BUILTINS or name in self.params:
            return
        known = [*self.params, *BUILTINS]
        raise ValueError(f"{where}.body names {{{name}}}, which is unknown (known: {', '.join(known)}, reply.NAME)")

    @property
    def reply_names(self) -> list[str]:
        out: list[str] = []
        for s in self.steps:
            if s.waits_for_answer and s.reply_name and s.reply_name not in out:
                out.append(s.reply_name)
        return out

    def resolve_params(self, given: dict[str, Any]) -> dict[str, Any]:
        """Defaults filled in, every value typed; unknown or missing names refused."""
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            known = ", ".join(f"{k} ({p.type})" for k, p in self.params.items()) or "none"
            raise RecipeError(f"recipe {self.name} has no parameter {', '.join(unknown)}; its parameters: {known}")
        out: dict[str, Any] = {}
        for k, p in self.params.items():
            if k in given:
                out[k] = p.coerce(k, given[k])
            elif p.default is not None:
                out[k] = p.coerce(k, p.default)
            else:
                raise RecipeError(f"recipe {self.name} needs -p {k}=... ({p.type}{': ' + p.description if p.description else ''})")
        return out

    def summary(self) -> str:
        ps = " ".join(f"{k}={p.default if p.default is not None else '<' + p.type + '>'}" for k, p in self.params.items())
        stop = f"{self.rounds} round{'s' if self.rounds > 1 else ''}" + (f" or until {self.until!r}" if self.until else "")
        return f"{self.description} [{stop}] {ps}".strip()


def parse_recipe(text: str, source: str = "<text>") -> Recipe:
    """Parse and validate TOML text; every fault is one RecipeFileProblem line naming the file, the
    key and its line (core/file_shape.py)."""
    data = file_shape.toml_table(text, source, FIX, RecipeFileProblem)
    return file_shape.validated(Recipe, data, source, text, FIX, error=RecipeFileProblem, one_based=True)


def load_recipe(path: Path) -> Recipe:
    """A recipe file known to be a regular file (the shipped ones); a file found on disk is read
    through the one loader (session/runs/recipes.py: store/loader.py), which also refuses a FIFO or a
    directory in its place."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecipeFileProblem(path, f"cannot be read ({exc.strerror or exc})", FIX) from None
    return parse_recipe(file_shape.decode(data, path, FIX, RecipeFileProblem), str(path))


def recipe_schema() -> dict[str, Any]:
    """The JSON Schema editors can validate recipes/*.toml against."""
    schema = Recipe.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "relay_repl recipe"
    return schema
