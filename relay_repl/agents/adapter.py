"""Adapter specs: the machine-readable part of `adapters/<kind>.md`, validated.

Why a Markdown file holds data: the adapter is documentation first (people read it
to learn what is specific to one agent), and the numbers and patterns the code uses
must not drift from what the prose says. So each adapter file carries exactly ONE
```` ```toml ```` block; this module finds it, parses it with `tomllib` and validates
it into `AdapterSpec`. Unknown keys are errors, so a typo fails loudly.

Where the files are found (first hit wins):
1. `$RELAY_ADAPTERS_DIR` if set (tests, experiments);
2. the package `relay_repl.adapters_data`, through the import system (`store.paths.data_dir`, importlib): in a wheel the
   shipped copies, in a checkout (editable install) the top-level `adapters/` folder that
   pyproject maps onto that name. Never a path guessed from the source tree.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from relay_repl.core.errors import RelayError
from relay_repl.core.validation import first_error
from relay_repl.store.paths import data_dir

from relay_repl.agents.plain_facts import TOML_BLOCK as _TOML_BLOCK


class AdapterError(RelayError):
    """An adapter file is missing or its toml block is invalid."""


def _regex(value: str) -> str:
    try:
        re.compile(value, re.M)
    except re.error as exc:
        raise ValueError(f"bad regex {value!r}: {exc}") from exc
    return value


Regex = Annotated[str, AfterValidator(_regex)]


class _Spec(BaseModel):
    # Inherited: an adapter's parts are built inside AdapterSpec's own schema when it is first
    # validated, not each on its own as well (six validators a listing never calls).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class RegistrySpec(_Spec):
    """Where the agent keeps its state: `$<env>` or `<default>`, plus relative paths."""

    env: str
    default: str
    paths: dict[str, str] = Field(default_factory=dict)

    def base(self, environ: Mapping[str, str] | None = None) -> Path:
        """The resolved base directory for an environment (HOME honoured for `~`)."""
        environ = os.environ if environ is None else environ
        raw = environ.get(self.env) or self.default
        if raw.startswith("~"):
            home = environ.get("HOME") or str(Path.home())
            raw = home + raw[1:]
        return Path(raw)


class ListingSpec(_Spec):
    command: list[str]
    binary_env: str | None = None
    timeout_seconds: float = Field(default=10.0, gt=0)


class TransportSpec(_Spec):
    """A transport this adapter offers and the capability flags the ranking compares."""

    name: str
    durable: bool = False
    native_reply: bool = False
    receipts: bool = False
    live_only: bool = False
    same_uid_only: bool = False
    needs_pane: bool = False
    when: str = ""


class ScreenSpec(_Spec):
    """Screen facts discovery reads from captures (`marks` maps a name to regexes, re.M).

    Classifying a pane as idle/busy/unknown is NOT done from these regexes: that is
    `relay_repl/agents/screens/<kind>.py`, tested on captures recorded from the real client
    (tests/screens/captures/<kind>-<version>/). Regexes alone proved wrong there (a
    no-break space, reverse-video placeholders, footers that also show while busy).
    """

    ui_mode_chars: str
    classifier: str = Field(description="module under relay_repl.agents.screens that classifies this kind's screens")
    marks: dict[str, list[Regex]] = Field(default_factory=dict)

    def compiled(self, state: str) -> list[re.Pattern[str]]:
        return [re.compile(p, re.M) for p in self.marks.get(state, [])]


class Latency(_Spec):
    what: str
    seconds: float = Field(ge=0)
    source: str


class AdapterSpec(_Spec):
    """Everything the code needs to know about one agent kind, from its adapter file."""

    kind: str
    prefix: str
    verified_versions: list[str] = Field(min_length=1)
    facts: str
    registry: RegistrySpec
    listing: ListingSpec | None = None
    transports: list[TransportSpec]
    status: dict[str, str] = Field(default_factory=dict)
    screen: ScreenSpec
    # A tuple default, not Field(default_factory=list): pydantic asks `inspect.signature(list)`
    # whether the factory takes the validated data, and the first such call parses list's text
    # signature with tokenize, compiling its pseudo-token regex: ~7 ms of `relay targets`' cold
    # start (which validates this spec) for an empty default.
    latencies: tuple[Latency, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> AdapterSpec:
        names = [t.name for t in self.transports]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate transport names in {names}")
        allowed = {"idle", "busy", "waiting", "unknown", "never-idle"}
        bad = {k: v for k, v in self.status.items() if v not in allowed}
        if bad:
            raise ValueError(f"status maps to unknown states {bad}; allowed {sorted(allowed)}")
        return self

    def transport(self, name: str) -> TransportSpec:
        for t in self.transports:
            if t.name == name:
                return t
        raise KeyError(f"{self.kind} adapter offers no transport {name!r}")

    def verified(self, version: str | None) -> bool:
        return version is not None and version in self.verified_versions


def adapter_dirs() -> list[Path]:
    """Candidate directories, in search order (see module doc)."""
    dirs: list[Path] = []
    env = os.environ.get("RELAY_ADAPTERS_DIR")
    if env:
        dirs.append(Path(env))
    dirs.append(data_dir("relay_repl.adapters_data"))
    return dirs


def adapter_path(kind: str) -> Path:
    for d in adapter_dirs():
        p = d / f"{kind}.md"
        if p.is_file():
            return p
    where = ", ".join(str(d) for d in adapter_dirs())
    raise AdapterError(f"no adapter file {kind}.md in {where}: copy adapters/_template.md to adapters/{kind}.md and fill it in")


def extract_toml(markdown: str, source: str = "<adapter>") -> str:
    """The single ```toml block of an adapter file. Pure."""
    blocks = _TOML_BLOCK.findall(markdown)
    if len(blocks) != 1:
        raise AdapterError(f"{source} must hold exactly one ```toml block, found {len(blocks)}: keep one and move examples to prose")
    return blocks[0]


def parse_adapter(markdown: str, source: str = "<adapter>") -> AdapterSpec:
    """Validate an adapter file's text into an AdapterSpec. Pure."""
    text = extract_toml(markdown, source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AdapterError(f"{source}: toml block does not parse ({exc}); fix the block") from exc
    try:
        return AdapterSpec.model_validate(data)
    except ValidationError as exc:
        loc, msg, more = first_error(exc, unknown_key="is not an adapter key")
        raise AdapterError(f"{source}: {loc}: {msg}{more}; fix the toml block") from exc


@cache
def _load(path: str, mtime: float) -> AdapterSpec:
    return parse_adapter(Path(path).read_text(encoding="utf-8"), path)


def load_adapter(kind: str) -> AdapterSpec:
    """The validated spec of `adapters/<kind>.md` (cached until the file changes)."""
    path = adapter_path(kind)
    spec = _load(str(path), path.stat().st_mtime)
    if spec.kind != kind:
        raise AdapterError(f"{path} declares kind {spec.kind!r}, expected {kind!r}: rename the file or fix `kind`")
    return spec


def available_adapters() -> list[str]:
    """Kinds with an adapter file (the template excluded)."""
    kinds: set[str] = set()
    for d in adapter_dirs():
        if d.is_dir():
            kinds.update(p.stem for p in d.glob("*.md") if not p.stem.startswith("_"))
    return sorted(kinds)
