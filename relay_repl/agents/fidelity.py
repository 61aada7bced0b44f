"""What a kind's fidelity module (`agents/<kind>/fidelity.py`) declares, and what it may ask of the lab.

Why here: `relay fidelity` and the screen recorder (relay_repl/lab/fidelity) check every kind's
reverse-engineered facts against the real clients, but a fact about a client changes with the
client, so its home is the kind's package; the lab iterates the registry and never names a kind.
The agents layer must not import the lab (pyproject's `lab-beside` contract), so a kind's
checks and screen scenarios receive the lab as an object implementing the protocols below
(dependency inversion), and the shared values (`Expect`, `Marks`) live here.

A kind's fidelity module provides (every name optional but `FACTS`):
- `FACTS`: its `FidelityFact` rows (agents/kind.py), naming the common ones below (`LISTED`, ...)
  where the lab's shared checks hold for it too;
- `LAB_COUNTS`: {check group: sessions of this kind that group's lab starts} (0 or absent: none);
- `MARKS`: what its screen shows in the states every client is staged in (`Marks`), and
  `screens(rec, name)`: the states only it has, staged through `ScreenStage`;
- `listed(target, session, version)`: asserts what discovery must report for one idle lab session;
  `busy_detail(target)` / `idle_detail(target)`: its own detail while / after a turn runs;
- `DISCOVERY_CHECKS`: {name: async check(lab: FidelityLab)} for facts only it has;
- `COMPOSER_END_KEY`, `tmux_unconfirmed(confirm, payload)`: what the tmux checks ask of it;
  `TMUX_NAME`: its session in the tmux checks' lab; `TMUX_CHECKS`: {name: async check(lab: TmuxLab)}
  for what only its client does (e.g. what Enter does while it is busy); `open_dialog(lab, name)` and
  `DIALOG` (`Dialog`): how a permission dialog is opened in its pane and answered (absent: none staged);
- `NATIVE_CHECKS`: {name: async check(lab: NativeLab)}: its own native transports against its client.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from relay_repl.agents.kind import FidelityFact
from relay_repl.core.target import Target

# -- the facts the lab's shared checks prove for every kind that lists them ----------------------------
# One text each, so a kind's table names the fact and the report shows it once for every kind.

LISTED = FidelityFact(fact="registry fields, listing, panes (every kind)", paths="discovery",
                      checks=("discovery:every_kind_listed_idle_with_its_panes_and_transports",))
BUSY_WHILE_A_TURN_RUNS = FidelityFact(fact="liveness: busy while a turn runs", paths="discovery, plans",
                                      checks=("discovery:busy_while_a_slow_turn_runs",))
TMUX_IDLE_DELIVERY = FidelityFact(fact="tmux idle delivery with receiver evidence", paths="tmux",
                                  checks=("tmux:idle_delivery_with_receiver_evidence",))
TMUX_REFUSALS = FidelityFact(fact="preflight refusals send zero keys (draft, copy-mode, slash menu)", paths="tmux",
                             checks=("tmux:refusal_sends_zero_keys",))
TMUX_DIALOG_REFUSAL = FidelityFact(fact="preflight refusal on a dialog sends zero keys", paths="tmux",
                                   checks=("tmux:dialog_refusal_sends_zero_keys",))


@dataclass
class Expect:
    """The reading a staged screen must get from the kind's classifier."""

    kind: str
    composer: str
    blockers: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    payload: str | None = None  # payload_visible(snapshot, payload) must be True


@dataclass(frozen=True)
class Marks:
    """What one client shows in the states the recorder stages in every client (`Recorder.common`):
    the text each wait looks for and each capture's description (the rest is the same)."""

    fresh: str  # the fresh capture's description
    done: str  # on screen once a turn finished
    after_turn: str
    slash: str  # on screen while the `/` menu is open
    slash_menu: str
    shell: str  # on screen in shell mode
    shell_mode: str
    shortcuts: str  # on screen while the `?` panel is open
    shortcuts_close: str  # the key that closes it ("?" is typed literally)
    home_text: str | None = None  # a draft that reads like the placeholder (None: the classifier cannot tell, not staged)
    home_shown_by_text: bool = True  # False: wait for the classifier to read a draft (the text is the placeholder's)
    cursor_home: str = ""
    after_turn_hints: tuple[str, ...] = ("done-line",)
    shell_close: str = "BSpace"  # the key that leaves shell mode on an empty prompt ("!" is typed literally)
    own_redraws: tuple[str, ...] = ()  # text of rows the client draws and removes on its own timer, no key's doing


def calm_rows(rows: list[str], marks: Marks) -> list[str]:
    """The screen's rows less those the client redraws on its own timer (`marks.own_redraws`) and blank rows
    (such a row takes a blank row's place): what a check that "nothing reached the pane" compares. A key that
    reached the pane shows as visible text (in the composer, or as a new turn), never as a blank row."""
    return [r.rstrip() for r in rows if r.strip() and not any(m in r for m in marks.own_redraws)]


class ScreenStage(Protocol):
    """The recorder (lab/fidelity/screens.py) as a kind's `screens(rec, name)` drives it: typing into a
    lab pane is setup, not the code under test; `record` reads the screen with the product's classifier."""

    def type(self, name: str, text: str) -> None: ...
    def key(self, name: str, *keys: str) -> None: ...
    def enter(self, name: str) -> None: ...
    def focus(self, name: str, on: bool) -> None:
        """A terminal's focus report (ESC [ I / ESC [ O) to the pane, as tmux sends on (un)focus."""
        ...
    def wait(self, name: str, pred: Callable[[Any], bool], what: str, timeout: float = 20.0) -> Any: ...
    def has(self, text: str) -> Callable[[Any], bool]: ...
    def idle(self, name: str, timeout: float = 30.0) -> None: ...
    def settle(self, seconds: float) -> None:
        """Let the client finish drawing before a capture (its redraw is not an event we can wait on)."""
        ...
    def classify(self, kind: str, snap: Any) -> Any: ...
    def record(self, kind: str, name: str, scenario: str, description: str, expect: Expect,
               snap: Any | None = None) -> None: ...
    def stub_tool_call(self, name: str, tool: str, args: dict[str, Any], then_text: str, match: str) -> None: ...
    def stub_reset(self, name: str) -> None: ...


class FidelityLab(Protocol):
    """The running lab as a kind's own discovery checks (`DISCOVERY_CHECKS`) see it."""

    def status(self) -> Any:
        """The lab's state (`lab.state.LabState`: `.session(name)`, `.versions`, `.of_kind(kind)`)."""
        ...
    async def discover(self) -> list[Target]: ...
    def one(self, targets: list[Target], spec: str, live: bool = True) -> Target: ...
    async def until(self, fn: Callable[[], Awaitable[Any]], timeout: float = 20.0) -> Any: ...
    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]: ...
    def pane_pid_of(self, tmux_session: str) -> tuple[str, int]: ...
    def launch_command(self, name: str, first: bool) -> list[str]:
        """The argv lab session `name` runs (its kind's lab launch)."""
        ...
    def client_env(self) -> dict[str, str]:
        """The environment a lab pane's client starts with (the lab's HOME, PATH with the pinned clients)."""
        ...
    def launch_env(self, name: str) -> dict[str, str]:
        """The variables lab session `name`'s client was started with (its kind's lab launch: API key, home, ...)."""
        ...
    def bin_dir(self) -> Path: ...
    def home(self) -> Path:
        """The lab clients' $HOME."""
        ...
    def layout(self) -> Any:
        """The lab's paths (`lab.layout.Layout`)."""
        ...
    def rename(self, name: str, new_name: str) -> None:
        """Rename a session from inside its own client (lab helper; Codex's `/rename`)."""
        ...
    async def wait_idle(self, name: str, timeout: float = 60.0) -> None: ...


async def in_turn(s: Any, spec: str, body: str, transport: str, timeout: float) -> Any:
    """What every native check's send asserts first: `body` sent to `spec` by `transport` through the
    lab's relay Session `s` ended in the receiver's turn (in_turn). Returns the Delivery for the
    check's own asserts."""
    from relay_repl.core.delivery import DeliveryState

    d = await s.send(spec, body, transport=transport, timeout=timeout)
    assert d.state is DeliveryState.IN_TURN, d.summary()
    return d


def main_texts(reqs: Any) -> list[str]:
    """The bodies of the stub model's main requests (`StubClient.requests`), as JSON text: a payload
    the model read is a substring of one of them."""
    return [json.dumps(r.body) for r in reqs if r.kind == "main"]


class NativeLab(Protocol):
    """The running lab as a kind's native-transport checks (`NATIVE_CHECKS`) see it (lab/fidelity/native.py)."""

    def session(self, answers: list[bool]) -> AbstractAsyncContextManager[tuple[Any, Any, Any]]:
        """A relay Session on the lab, discovery done, its gate answering `answers` then No: (session, gate, inbox)."""
        ...
    def stub(self) -> AbstractAsyncContextManager[Any]:
        """A client of the lab's stub model server (`lab.stubs.client.StubClient`)."""
        ...
    async def make_busy(self, name: str, seconds: float) -> None:
        """Start a turn in lab session `name` that the stub holds for `seconds`."""
        ...
    async def wait_idle(self, name: str, timeout: float = 60.0) -> None: ...


@dataclass(frozen=True)
class Dialog:
    """A permission dialog in a kind's pane, as the tmux checks stage and answer it."""

    asked: str  # on screen while the dialog is open
    answer: str  # the key an operator answers it with (never Escape: it would end the turn)


class TmuxLab(Protocol):
    """The running lab as a kind's own tmux checks (`TMUX_CHECKS`, `open_dialog`) see it (lab/fidelity/tmux.py)."""

    async def idle(self, name: str, timeout: float = 60.0) -> None: ...
    async def make_busy(self, name: str, seconds: float) -> None: ...
    async def live_send(self, name: str, payload: str, timeout: float = 30.0) -> tuple[Any, list[tuple[str, str]], Target]:
        """An approved tmux send to lab session `name`, confirmed: (Delivery, the keys that left, the target)."""
        ...
    def typed_once(self, keys: list[tuple[str, str]], payload: str, target: Target) -> bool:
        """The keys are the payload typed once (its kind's `tmux_lead` characters one at a time first), then one Enter."""
        ...
    async def clear_composer(self, name: str) -> None: ...
    async def type_text(self, name: str, text: str) -> None:
        """Type into the idle, empty composer; return once it shows there."""
        ...
    async def submit(self, name: str, text: str) -> None:
        """Type into the idle composer and press Enter once it shows there (how the lab stages a turn)."""
        ...
    async def press_enter(self, name: str) -> None: ...
    def keys(self, name: str, text: str) -> None:
        """Type `text` literally into the pane, nothing waited for."""
        ...
    async def wait_screen(self, name: str, pred: Callable[[list[str]], bool], what: str, timeout: float = 20) -> None: ...
    async def stub_tool_call(self, name: str, tool: str, args: dict[str, Any], then_text: str, match: str) -> None:
        """Script the stub: the next request of `name` matching `match` calls `tool` with `args`, then says `then_text`."""
        ...


async def send_while_busy(lab: TmuxLab, name: str, payload: str, hold: float, timeout: float, why: str) -> Any:
    """What every kind's busy-Enter check starts with: a turn the stub holds `hold` s, the payload sent
    into it through the tmux transport, in the turn, typed once with one Enter (`why` says what else
    would have been wrong), the screen read busy at submit. Returns the Delivery for the kind's own asserts."""
    from relay_repl.core.delivery import DeliveryState

    await lab.idle(name)
    await lab.make_busy(name, hold)
    d, keys, target = await lab.live_send(name, payload, timeout=timeout)
    assert d.state is DeliveryState.IN_TURN, d.summary() + "\n" + "\n".join(e.detail for e in d.evidence)
    assert lab.typed_once(keys, payload, target), why
    assert (d.extra.tmux or {})["kind_at_submit"] == "busy", d.extra.tmux
    return d
