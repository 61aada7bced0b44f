"""The tmux transport's stage and submit decisions, as one pure function.

`decide(phase, snapshot, reading, elapsed, ctx)` says what to do next from what the
screen shows and how long the phase has run; it sends no key and reads no pane, so
every rule of seam §6 (two stable polls before Enter, re-classify before Enter,
at most one Tab, never a second Enter) is fast-tested on the recorded captures.
`transports/tmux.py` keeps only the I/O around it: snapshot, sleep, send, log.

Phases:
- STAGE: the literal payload was typed; poll until it is visible, exact, on two
  polls in a row (Codex's paste burst swallows an early Enter), or give up at the
  stage timeout with Enter NOT pressed.
- SUBMIT: the staged screen is re-classified right before Enter; any blocker other
  than the draft we typed, an unreadable screen or a changed composer holds.
- AFTER_ENTER: watch the screen until the settle time for signs the line was taken;
  an agent whose busy composer queues on Tab (Codex) earns exactly one Tab.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from types import ModuleType

from pydantic import BaseModel, ConfigDict

from relay_repl.agents.screens.model import ScreenReading, Snapshot, SubmitHint


class Phase(str, Enum):
    STAGE = "stage"
    SUBMIT = "submit"
    AFTER_ENTER = "after_enter"


class Action(str, Enum):
    WAIT = "wait"        # poll again
    STAGED = "staged"    # payload exact and stable: go on to submit
    ENTER = "enter"      # press Enter once (after `delay` seconds)
    TAB = "tab"          # press Tab once (busy Codex, Enter did not take)
    HOLD = "hold"        # stop, press nothing: the delivery stays TYPED
    GONE = "gone"        # the pane vanished
    DONE = "done"        # stop watching the screen


class Decision(BaseModel):
    """What to do next and why, with the reading/hint the rule looked at (for the log)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    action: Action
    reason: str = ""
    delay: float = 0.0
    visible: bool = False
    reading: ScreenReading | None = None
    hint: SubmitHint | None = None


@dataclass(frozen=True)
class StepContext:
    """What the rules need besides the screen: the payload, the agent's screen
    classifier module, the limits, and what earlier polls saw."""

    payload: str
    screen: ModuleType
    stage_timeout: float = 5.0
    submit_gap: float = 0.05
    settle: float = 2.0
    tab_after: float = 1.0
    tab_queues_when_busy: bool = False
    busy_submit: str = ""
    visible_before: bool = False       # STAGE: the payload was visible on the previous poll
    before: Snapshot | None = None     # AFTER_ENTER: the screen Enter (or Tab) was pressed on
    tabbed: bool = False               # AFTER_ENTER: the one Tab was already sent


def _other_blockers(reading: ScreenReading) -> list[str]:
    """Blockers except `draft`: after staging, the draft is our own payload."""
    return sorted(set(reading.blockers) - {"draft"})


def decide(phase: Phase, snap: Snapshot | None, reading: ScreenReading | None, elapsed: float,
           ctx: StepContext) -> Decision:
    """The next action. `elapsed` counts from the literal (STAGE, SUBMIT; `inf` when the
    literal was typed by another process) or from Enter (AFTER_ENTER). `reading` may be
    None; it is then classified here when a rule needs it."""
    if phase is Phase.STAGE:
        return _stage(snap, elapsed, ctx)
    if phase is Phase.SUBMIT:
        return _submit(snap, reading, elapsed, ctx)
    return _after_enter(snap, reading, elapsed, ctx)


def _stage(snap: Snapshot | None, elapsed: float, ctx: StepContext) -> Decision:
    if snap is None:
        return Decision(action=Action.GONE, reason="pane vanished after the payload was typed; Enter not pressed")
    visible = bool(ctx.screen.payload_visible(snap, ctx.payload))
    if visible and ctx.visible_before:
        return Decision(action=Action.STAGED, visible=True,
                        reason="payload visible in the composer, exact and stable on two polls")
    if elapsed >= ctx.stage_timeout:
        return Decision(action=Action.HOLD, visible=visible, reading=ctx.screen.classify(snap),
                        reason=(f"pending staged: the payload did not become fully visible in the composer within "
                                f"{ctx.stage_timeout:g}s; Enter NOT pressed, pane left as is (look at it before any "
                                "retry)"))
    return Decision(action=Action.WAIT, visible=visible)


def _submit(snap: Snapshot | None, reading: ScreenReading | None, elapsed: float, ctx: StepContext) -> Decision:
    if snap is not None and reading is None:
        reading = ctx.screen.classify(snap)
    problem = None
    if snap is None or reading is None:
        problem = "pane vanished"
    elif not ctx.screen.payload_visible(snap, ctx.payload):
        problem = "the composer no longer shows exactly the payload"
    elif _other_blockers(reading):
        problem = f"screen now shows {', '.join(_other_blockers(reading))}"
    elif reading.kind == "unknown":
        problem = "screen no longer recognised as idle or busy"
    if problem:
        return Decision(action=Action.HOLD, reading=reading,
                        reason=f"pending staged: {problem}; Enter NOT pressed (it could answer a dialog or run a command)")
    assert reading is not None
    what = {"idle": "a new turn should start", "busy": ctx.busy_submit}[reading.kind]
    return Decision(action=Action.ENTER, reading=reading, visible=True, delay=max(0.0, ctx.submit_gap - elapsed),
                    reason=f"Enter pressed once ({reading.kind} target: {what})")


def _after_enter(snap: Snapshot | None, reading: ScreenReading | None, elapsed: float,
                 ctx: StepContext) -> Decision:
    if snap is None:
        return Decision(action=Action.GONE, reason="pane vanished after Enter")
    assert ctx.before is not None, "AFTER_ENTER needs the screen Enter was pressed on"
    hint: SubmitHint = ctx.screen.submitted(ctx.before, snap, ctx.payload)
    if hint.composer_emptied or hint.payload_in_history or hint.queued:
        return Decision(action=Action.DONE, hint=hint, reason="the screen shows the line was taken")
    if (ctx.tab_queues_when_busy and not ctx.tabbed and hint.tab_to_queue and hint.turn_running
            and elapsed >= ctx.tab_after):
        r = reading or ctx.screen.classify(snap)
        if _other_blockers(r) or not ctx.screen.payload_visible(snap, ctx.payload):
            return Decision(action=Action.DONE, hint=hint, reading=r,
                            reason="Tab withheld: the screen changed (a blocker, or the payload left the composer)")
        return Decision(action=Action.TAB, hint=hint, reading=r, visible=True,
                        reason=(f"Enter did not take: {elapsed:.1f}s later the payload still sits beside "
                                "`tab to queue message` in a busy turn; Tab sent once to queue it as a follow-up"))
    if elapsed >= ctx.settle:
        return Decision(action=Action.DONE, hint=hint, reason="settle time over")
    return Decision(action=Action.WAIT, hint=hint)
