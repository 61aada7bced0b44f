"""The recipe runner: the operator's initiator for every round of a recipe.

Rules it keeps (seed section 9, issue 9):
- hop is reset to 0 at the start of each round the recipe declares, and only
  here (the initiator), never because of a message received; inside a round
  every step carries the newest hop of the round's chain + 1 (a reply's hop
  already counts its own +1), so a step that would pass the cap of 4 stops
  the run naming that step;
- an answer whose id was already taken in this run is a duplicate: logged,
  neither acted on nor answered;
- `relay-halt` in any answer, or a halt in force, stops the run at once;
- every send goes through the session's gate with a heading saying where the
  run stands; a No stops the run as `withheld`, resumable;
- one gate prompt at a time, but a fan-out step (ask-all) sends the next
  approved question without waiting for the previous target's reply.

Everything a resume needs is in the ledger: `run-start` (the recipe's text and
the parameters), `run-step` (the relay id taken for a step, written BEFORE the
gate is asked, so a kill -9 at any point leaves a trail), `run-answer`, and
`run-end`, all under the run id (so `relay why RUN_ID` shows them). The state
of each step is derived from the ledger's own events for its relay id (the
gate's answer, the outcome), never trusted from the runner's memory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, Field

from relay_repl.core import run_words
from relay_repl.core.controls import safe_echo, visible
from relay_repl.core.delivery import DELIVERED, Delivery, DeliveryState
from relay_repl.core.envelope import HOP_CAP, Envelope, contains_halt
from relay_repl.core.peertext import quote
from relay_repl.session.core.gate import ApproveFn
from relay_repl.session.core.hooks import RunHooks
from relay_repl.session.runs.journal import JournalMismatch, check_row, sealed, send_status
from relay_repl.core.errors import DiscoveryError, EnvelopeError, LoopHalt, RelayError, UsageError
from relay_repl.core.plan import Plan
from relay_repl.core.recipe import Recipe, RecipeError, Step, parse_recipe, render
from relay_repl.session.runs.send_journal import JournalSend
from relay_repl.session.core.sending import remote_spec
from relay_repl.system.polling import poll_until
from relay_repl.transports.base import StageLog

NO_REPLY_YET = "(no reply yet)"
PROGRESS_EVERY = 10.0
POLL = 0.05
LOOK_EVERY = 0.5
"""A wait for an answer sleeps until this session takes one in (Answers.next_arrival), and the ledger
is read at least this often for what only it shows (another process's `relay halt`, or its inbox
message): by one look shared by every wait of the session, not one per wait. Before, each wait read
the ledger every POLL (20 reads a second per target), then every LOOK_EVERY each: relay's own CPU
growing with how long the receivers took, and with how many (issue 33)."""


class Stop(Exception):
    """Ends a run early with a state (withheld, halted, hop-cap, timed-out, failed, unconfirmed)."""

    def __init__(self, state: str, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


class Answer(BaseModel):
    """A reply or acknowledgment linked to one of the run's sends."""

    answers: str = Field(description="The relay id it answers")
    relay_id: str | None = Field(default=None, description="Its own id")
    hop: int = 0
    body: str
    line: str
    peer: str | None = None
    verdict: str | None = Field(default=None, description="The origin verdict, when the conversation layer gives one")
    session: str | None = Field(default=None, description="The session the kernel pid was found to be (not a claim)")
    at: float = Field(default_factory=time.time)


def quoted(answer: Answer) -> str:
    """An answer as it goes into a later body (`{reply.NAME}`, `{last}`): its sender's words with the
    verdict, `codex:beta (verified) wrote: «...»`, never bare text the receiver would take as the operator's."""
    return quote(answer.session or answer.peer or "?", answer.verdict or "no verdict", answer.body)


class StepRun(BaseModel):
    """One send of a run (a fan-out step has one per target)."""

    round: int
    index: int
    kind: str
    target: str
    relay_id: str | None = None
    hop: int | None = None
    state: str = "planned"
    delivery: str | None = None
    reason: str | None = None
    answer: Answer | None = None

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.round, self.index, self.target)

    @classmethod
    def journaled(cls, sent: JournalSend) -> StepRun:
        """The step as the stopped run's journal recorded it (its state is read from the ledger later)."""
        return cls(round=sent.at[0], index=sent.at[1], kind=sent.kind, target=sent.target, relay_id=sent.relay_id,
                   hop=sent.hop)


class Run(BaseModel):
    """What `session.run()` returns: the rounds, steps, states and replies; its repr is a table."""

    id: str
    recipe: str
    params: dict[str, Any]
    rounds: int
    state: str = "running"
    reason: str | None = None
    round: int = 0
    steps: list[StepRun] = Field(default_factory=list)
    dry_run: bool = False

    @property
    def replies(self) -> dict[str, str]:
        """The newest answer per target."""
        out: dict[str, str] = {}
        for s in self.steps:
            if s.answer is not None:
                out[s.target] = s.answer.body
        return out

    @property
    def max_hop(self) -> int:
        hops = [s.hop for s in self.steps if s.hop is not None]
        hops += [s.answer.hop for s in self.steps if s.answer is not None]
        return max(hops, default=0)

    def table(self) -> str:
        rows = [("ROUND", "STEP", "KIND", "TARGET", "HOP", "STATE", "RELAY ID", "REPLY")]
        for s in self.steps:
            reply = ""
            if s.answer is not None:
                text = s.answer.body if len(s.answer.body) <= 60 else s.answer.body[:59] + "…"
                reply = f"(hop {s.answer.hop}) {text}"
            elif s.reason:
                reply = s.reason if len(s.reason) <= 60 else s.reason[:59] + "…"
            rows.append((str(s.round), str(s.index), s.kind, visible(s.target), "-" if s.hop is None else str(s.hop),
                         s.state, visible(s.relay_id or "-"), visible(reply)))  # a turn reply's line break: no row
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows)

    def __repr__(self) -> str:
        head = f"<Run {self.id} {self.recipe}: {self.state}, round {self.round}/{self.rounds}"
        if self.reason:
            head += f" — {self.reason}"
        if not self.steps:
            return head + ">"
        body = "\n".join("  " + line.rstrip() for line in self.table().splitlines())
        return visible(f"{head}\n{body}>", keep_newlines=True)  # replies are a peer's text

    __str__ = __repr__


new_run_id = run_words.new_run_id  # its one home is core/run_words.py (a plain pre-plan draws it too)


def parse_answer(line: str) -> Envelope | None:
    """An answer's envelope (its `re=` link included), or None for a line that is not one."""
    try:
        return Envelope.parse(line)
    except (EnvelopeError, ValueError):
        return None


class _OneAtATime(RunHooks):
    """A recipe run's hook on the session's approver: one prompt on the terminal at a time (sends
    and waits stay concurrent), and nothing more asked once the run is stopping."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.lock = anyio.Lock()

    def approver(self, approve: ApproveFn) -> ApproveFn:
        async def one_at_a_time(plan: Plan) -> bool:
            async with self.lock:
                if self.runner._stopping:
                    return False  # the run is stopping: nothing more is asked, nothing more is sent
                return bool(await approve(plan))

        return one_at_a_time


class Runner:
    """Runs (or resumes, or dry-runs) one recipe on one session."""

    def __init__(self, session: Any, recipe: Recipe, params: dict[str, Any], *, source: str, path: str | None = None,
                 run_id: str | None = None, dry_run: bool = False, echo: Callable[[str], None] | None = None,
                 resume: bool = False, first_relay_id: str | None = None,
                 listing: dict[str, Any] | None = None) -> None:
        self.session = session
        self.ledger = session.ledger
        self.recipe = recipe
        self.params = params
        self.source = source
        self.path = path
        self.dry_run = dry_run
        self.resume = resume
        self.say = safe_echo(echo or session.echo or print)  # answers are printed: never raw to the terminal
        self.run = Run(id=run_id or new_run_id(), recipe=recipe.name, params=params, rounds=recipe.rounds,
                       dry_run=dry_run)
        self.prior: dict[tuple[int, int, str], StepRun] = {}
        self.used_answers: set[str] = set()
        self.replies: dict[str, str] = {}
        self.last = NO_REPLY_YET
        self._targets: dict[str, list[str]] = {}
        self._next_n = 0
        self._stopping = False
        self._dupes_logged: set[tuple[Any, str]] = set()
        self._inbox_seen: dict[str, int] = {}
        # the id a plain pre-plan (phase 1 of `relay run`) already took from the ledger's counter and showed
        # on the first plan: the first send uses it instead of taking the next one (the id shown is the id sent)
        self._first_relay_id = first_relay_id
        # what a plain pre-plan of a Claude run already showed of the inbox listing: {"said": the runner's line
        # printed, "pins": the record's random and clock values drawn (agents/claude_code/peer_record.PINS)}
        self._listing = listing

    # -- ledger records --------------------------------------------------------
    def _journal(self, sent: JournalSend) -> None:
        """The run's journal row for one send (session/runs/send_journal.py), before the gate is asked."""
        self._event(sent.row_kind, **sent.row())

    def _event(self, event_kind: str, **data: Any) -> None:
        if not self.dry_run:
            row = {"run": self.run.id, **data}
            self.ledger.event(event_kind, relay_id=self.run.id,
                              data=sealed(event_kind, row) if event_kind in ("run-start", "run-step") else row)

    # -- targets ---------------------------------------------------------------
    async def resolve_targets(self) -> None:
        """Every target every step names, resolved before round 1 (an unknown one is a usage error)."""
        for i, step in enumerate(self.recipe.steps, 1):
            specs = self._specs(step)
            resolved: list[str] = []
            for spec in specs:
                try:
                    resolved.append((await self.session.target(spec)).spec)
                except (DiscoveryError, UsageError) as exc:
                    raise RecipeError(f"recipe {self.recipe.name} step {i} ({step.kind} {step.to}): {exc}") from None
            if not resolved:
                raise RecipeError(f"recipe {self.recipe.name} step {i}: no live target to {step.kind} "
                                  "(run `relay targets`)")
            self._targets[step.to] = resolved

    async def _reply_route(self) -> None:
        """Some agents answer natively only to a listed peer (Claude's SendMessage): list the
        operator's inbox first (its own plan and y/N) when a step waits for such an answer."""
        from relay_repl.agents.registry import kind_for

        waits_on: str | None = None
        for step in self.recipe.steps:
            if not step.waits_for_answer:
                continue
            for spec in self._targets[step.to]:
                tgt = await self.session.target(spec)
                if tgt.host is not None:  # the host's relay lists its own inbox (asked over the channel)
                    continue
                kind = kind_for(tgt.kind)
                if kind is not None and kind.replies.answers_listed_inbox:
                    waits_on = waits_on or kind.facts.label
        if waits_on is None or self.session.inbox_server is None or self.session.registration is not None:
            return
        listing = self._listing or {}
        if not listing.get("said"):  # a plain phase 1 printed it before this listing's plan (frontends/run_plain.py)
            self.say(run_words.listing_first(waits_on))
        if not await self.session.register_inbox(pins=listing.get("pins")):
            raise Stop("withheld", f"the operator declined to list the inbox as a {waits_on} peer, so no {waits_on} "
                       "reply could come back; nothing was sent")

    def _specs(self, step: Step) -> list[str]:
        p = step.to_param
        if p is None:
            return [step.to]
        value = self.params[p]
        if isinstance(value, list):
            if [v.lower() for v in value] == ["all"]:
                return self._all_live()
            return list(value)
        return [value]

    def named_specs(self) -> list[str] | None:
        """Every target spec the run's steps name on this host, or None when one names `all` (the
        live targets, so every kind is discovered first): what `Finder.hold` discovers for the run."""
        specs: list[str] = []
        for step in self.recipe.steps:
            p = step.to_param
            value = [step.to] if p is None else self.params.get(p)
            values = value if isinstance(value, list) else [value]
            if value is None or [str(v).lower() for v in values] == ["all"]:
                return None  # every kind, as before: resolving the step says what is wrong with it
            specs += [str(v) for v in values if not remote_spec(str(v))]
        return specs

    async def discover(self) -> None:
        """The targets the run names, discovered once before it resolves them (`Finder.hold`): only
        their kinds, or every kind when a step names `all`; nothing when the session has them."""
        if self.session._refreshed:
            return
        specs = self.named_specs()
        await (self.session.refresh() if specs is None else self.session.finder.hold(specs))

    def _all_live(self) -> list[str]:
        me = os.getpid()
        return [t.spec for t in self.session.targets if t.live and t.transports and t.pid != me]

    # -- templates ---------------------------------------------------------------
    def _values(self, round_: int) -> dict[str, str]:
        vals = {k: ", ".join(v) if isinstance(v, list) else str(v) for k, v in self.params.items()}
        vals.update(round=str(round_), rounds=str(self.recipe.rounds), run=self.run.id, last=self.last)
        for name in self.recipe.reply_names:
            vals[f"reply.{name}"] = self.replies.get(name, NO_REPLY_YET)
        return vals

    def _heading(self, round_: int, index: int, step: Step, target: str) -> str:
        return run_words.step_heading(self.recipe.name, self.run.id, round_, self.recipe.rounds, index, step.kind,
                                      target)

    # -- the run -----------------------------------------------------------------
    async def execute(self) -> Run:
        if not self.dry_run:
            if self.resume:
                self._event("run-resume", pid=os.getpid())
            else:
                self._event("run-start", recipe=self.recipe.name, path=self.path, source=self.source,
                            params=self.params, pid=os.getpid())
        if self.dry_run:
            self._next_n = int(self.ledger.peek_next_id(self.session.me.address).rsplit("-", 1)[1])
        hooks = _OneAtATime(self)
        try:
            with self.session.running(hooks):
                if self.resume and not self.dry_run:
                    self._check_journal()  # a row the stopped run did not write: stop before anything is sent
                await self.resolve_targets()
                if not self.dry_run:
                    await self._reply_route()
                for round_ in range(1, self.recipe.rounds + 1):
                    self.run.round = round_
                    await self._round(round_)
                    if self._until_met(round_):
                        self.run.reason = f"a reply contains {self.recipe.until!r}"
                        break
                self.run.state = "planned" if self.dry_run else "done"
        except RecipeError:
            raise  # a usage error (an unknown target...): found before anything was sent
        except LoopHalt as exc:  # a halt raised by the session during a send: the run stops at once
            self.run.state, self.run.reason = "halted", str(exc)
            self.say(f"run {self.run.id} stopped: {exc}")
        except Stop as stop:
            self.run.state, self.run.reason = stop.state, stop.reason
            self.say(f"run {self.run.id} stopped: {stop.reason}")
            if stop.state in ("withheld", "timed-out", "unconfirmed", "failed"):
                self.say(f"  resume it with `relay run --resume {self.run.id}` or `await session.resume({self.run.id!r})`")
        finally:
            if self.run.state == "running":  # cancelled or crashed in between: the ledger says so
                self._event("run-end", state="interrupted", reason="the run was cancelled")
        self._event("run-end", state=self.run.state, reason=self.run.reason, max_hop=self.run.max_hop)
        return self.run

    def _until_met(self, round_: int) -> bool:
        if self.recipe.until is None:
            return False
        for s in self.run.steps:
            if s.round != round_ or s.answer is None:
                continue
            step = self.recipe.steps[s.index - 1]
            if self.recipe.until_reply is not None and step.reply_name != self.recipe.until_reply:
                continue
            if self.recipe.until in s.answer.body:
                return True
        return False

    async def _round(self, round_: int) -> None:
        chain = -1  # the reset: only here, at the start of a round the recipe declares
        for index, step in enumerate(self.recipe.steps, 1):
            halt = self.ledger.active_halt()
            if halt and not self.dry_run:
                raise Stop("halted", f"relay-halt is in force ({halt.reason}); clear it with session.unhalt()")
            hop = chain + 1
            if hop > HOP_CAP:
                raise Stop("hop-cap", f"round {round_}/{self.recipe.rounds}, step {index} ({step.kind} {step.to}) "
                           f"would carry hop {hop}, above the cap of {HOP_CAP}: stopped")
            targets = self._targets[step.to]
            results = await self._fan_out(round_, index, step, targets, hop)
            answers = [r.answer for r in results if r.answer is not None]
            for r in results:
                chain = max(chain, r.hop if r.hop is not None else hop)
            for a in answers:
                chain = max(chain, a.hop)
            if step.waits_for_answer and step.reply_name:
                texts = [quoted(a) for a in answers]  # peer text stays peer text: quoted, never the operator's
                if texts:
                    self.replies[step.reply_name] = " | ".join(texts)
            if answers:
                self.last = quoted(answers[-1])

    async def _fan_out(self, round_: int, index: int, step: Step, targets: list[str], hop: int) -> list[StepRun]:
        """One step to each of its targets: one prompt at a time (the gate's lock), but
        each approved send and its wait run on while the next target is asked."""
        if len(targets) == 1:
            return [await self._step(round_, index, step, targets[0], hop)]
        slots: list[StepRun | None] = [None] * len(targets)
        errors: list[Exception] = []

        async def one(i: int, target: str) -> None:
            try:
                slots[i] = await self._step(round_, index, step, target, hop)
            except Exception as exc:  # the others finish what they started; no new prompt is shown
                errors.append(exc)
                self._stopping = True

        async with anyio.create_task_group() as tg:
            for i, target in enumerate(targets):
                tg.start_soon(one, i, target)
                await anyio.sleep(0)  # the next target's plan is built right away
        stops = [e for e in errors if isinstance(e, Stop)]
        if errors:
            raise (stops or errors)[0]
        return [r for r in slots if r is not None]

    # -- one send -------------------------------------------------------------
    async def _step(self, round_: int, index: int, step: Step, target: str, hop: int) -> StepRun:
        rec = StepRun(round=round_, index=index, kind=step.kind, target=target, hop=hop)
        self.run.steps.append(rec)
        heading = self._heading(round_, index, step, target)
        if self.dry_run:
            return await self._dry(rec, step, heading)
        prior = self.prior.get(rec.key)
        if prior is not None and prior.relay_id:
            done = await self._settle_prior(rec, prior, step, heading)
            if done:
                return rec
        if step.kind == "forward":
            return await self._forward(rec, step, heading)
        body = render(step.body or "", self._values(round_))
        # recorded before the gate is asked: a kill -9 from here on leaves the id for resume to inspect. The id
        # and its journal row are one commit (issue 33: a commit each before): a crash keeps both or neither
        with self.ledger.one_commit():
            rec.relay_id, self._first_relay_id = self._first_relay_id or self.ledger.next_id(self.session.me.address), None
            self._journal(JournalSend(runner="recipe", at=(round_, index), kind=step.kind, target=target,
                                      relay_id=rec.relay_id, hop=hop, want=step.wants))
        d = await self.session.send(target, body, want=step.wants, transport=step.transport, timeout=step.timeout,
                                    hop=hop, heading=heading, relay_id=rec.relay_id)
        return await self._after_send(rec, step, d)

    async def _forward(self, rec: StepRun, step: Step, heading: str) -> StepRun:
        source = next((s for s in reversed(self.run.steps) if s.answer is not None), None)
        if source is None or source.answer is None:
            raise Stop("failed", f"round {rec.round}, step {rec.index}: nothing to forward (no reply yet in this run)")
        env = Envelope.parse(source.answer.line)
        if env is None:
            raise Stop("failed", f"round {rec.round}, step {rec.index}: the newest reply is not a relay envelope")
        if env.hop >= HOP_CAP:
            raise Stop("hop-cap", f"round {rec.round}, step {rec.index} (forward to {rec.target}): the reply is at "
                       f"hop {env.hop}, forwarding it would pass the cap of {HOP_CAP}: stopped")
        rec.relay_id, rec.hop = env.id, env.hop + 1
        self._journal(JournalSend(runner="recipe", at=(rec.round, rec.index), kind="forward", target=rec.target,
                                  relay_id=rec.relay_id, hop=rec.hop, want=env.want))
        d = await self.session.forward(rec.target, source.answer.line, transport=step.transport,
                                       timeout=step.timeout, heading=heading)
        return await self._after_send(rec, step, d)

    async def _after_send(self, rec: StepRun, step: Step, d: Delivery) -> StepRun:
        rec.delivery = d.key
        where = f"round {rec.round}/{self.recipe.rounds}, step {rec.index} ({step.kind} {rec.target})"
        if d.state is DeliveryState.WITHHELD:
            rec.state, rec.reason = "withheld", "the operator answered No"
            raise Stop("withheld", f"{where}: the operator answered No; nothing was sent")
        if d.outcome not in ("delivered", "pending"):  # refused, failed, halted, abandoned...
            rec.state, rec.reason = d.state.value, d.reason
            raise Stop("halted" if d.outcome == "halted" else "failed", f"{where}: {d.summary()}")
        rec.state = "delivered" if d.outcome == "delivered" else d.state.value
        if not step.waits_for_answer:
            if d.outcome != "delivered":
                rec.reason = d.summary()
                raise Stop("unconfirmed", f"{where}: not confirmed: {d.summary()}")
            return rec
        return await self._wait(rec, step, d)

    async def _wait(self, rec: StepRun, step: Step, d: Delivery | None, timeout: float | None = None) -> StepRun:
        where = f"round {rec.round}/{self.recipe.rounds}, step {rec.index} ({step.kind} {rec.target})"
        what = "reply" if step.wants == "reply" else "acknowledgment"
        limit = step.timeout if timeout is None else timeout
        relay_id = rec.relay_id
        assert relay_id is not None

        answers = getattr(self.session, "answers", None)  # wakes this wait when an answer to relay_id comes in
        seen = 0

        async def check() -> Answer | None:
            nonlocal seen
            if answers is not None:
                seen = answers.arrivals(relay_id)  # before the read: one arriving after it is not slept through
            answer = self._find_answer(relay_id, d)
            if answer is not None:
                return answer
            halt = self.ledger.active_halt()
            if halt:
                rec.state, rec.reason = "halted", halt.reason
                raise Stop("halted", f"{where}: relay-halt is in force ({halt.reason}): stopped at once")
            return None

        def note(left: float) -> None:
            self.say(f"  … {where}: waiting for the {what} to {relay_id} ({limit - left:.0f}/{limit:g} s)")

        bound, interval, sleep = limit, POLL, anyio.sleep
        if d is not None and remote_spec(d.target) and d.reply is None:  # a host's answer is asked for, not pushed
            self.say(f"  … {where}: waiting up to {limit:g} s for the {what} to {relay_id} (judged on its host)")
            await d.wait_reply(limit)
            bound = POLL  # what the host had is in d.reply now: read it once, do not wait again
        elif answers is not None:  # sleep until this session takes in an answer to relay_id (or a halt), or
            interval = PROGRESS_EVERY  # the waits' shared look at the ledger, every LOOK_EVERY, finds what only it shows
            end = time.monotonic() + bound

            async def until_answer(delay: float) -> None:
                await answers.next_arrival(relay_id, seen, min(delay, end - time.monotonic()), look_every=LOOK_EVERY)

            sleep = until_answer

        answer = await poll_until(check, timeout=bound, interval=interval, sleep=sleep, progress=note,
                                  progress_every=PROGRESS_EVERY)
        if answer is None:
            rec.state = "no-reply" if rec.state == "delivered" else rec.state
            rec.reason = f"no {what} within {limit:g} s"
            raise Stop("timed-out", f"{where}: no {what} within {limit:g} s ({'delivered' if rec.state == 'no-reply' else rec.state})")
        rec.answer = answer
        rec.state = "answered"
        if answer.relay_id:
            self.used_answers.add(answer.relay_id)
        self._event("run-answer", round=rec.round, step=rec.index, target=rec.target, answers=rec.relay_id,
                    answer=answer.model_dump())
        self.say(f"  {where}: {what} (hop {answer.hop}) ← {rec.target}: {answer.body}")
        if contains_halt(answer.line):  # kept through the inbox, so normally recorded already; else the one check
            if not self.ledger.active_halt():
                self.ledger.halt_if_carried(answer.line, where=f"the {what} to {rec.relay_id}", by=answer.peer or rec.target)
            raise Stop("halted", f"{where}: the {what} carries relay-halt: stopped at once")
        return rec

    def _find_answer(self, relay_id: str, d: Delivery | None) -> Answer | None:
        """The answer to `relay_id`: the one the conversation layer linked to the
        delivery (`d.reply`), else an inbox message whose `re=` names it."""
        linked = getattr(d, "reply", None) if d is not None else None

        def candidates() -> Iterator[tuple[str, Any]]:
            """The linked answer first; the ledger is read only when that one is not taken (issue 33:
            one inbox read per answered step for a list whose first entry was the answer)."""
            if linked is not None:
                yield getattr(linked, "line", None) or str(linked), linked
            # the inbox keeps each message's `re=` link (its `answers`), written on arrival
            for msg in self.ledger.inbox(self._inbox_seen.get(relay_id, 0), answers=relay_id):
                yield msg.line, msg

        for line, msg in candidates():
            verdict = getattr(msg, "verdict", None)
            kind = verdict if isinstance(verdict, str) or verdict is None else getattr(verdict, "verdict", str(verdict))
            if kind is not None and kind != "verified":  # a claimed answer from the wrong process is not acted on
                seq = getattr(msg, "seq", None)
                if seq is not None and (seq, relay_id) not in self._dupes_logged:
                    self._dupes_logged.add((seq, relay_id))
                    self.say(f"  an answer to {relay_id} arrived with verdict {kind!r} ({verdict}): not acted on")
                continue
            env = parse_answer(line)
            own_id = env.id if env else getattr(msg, "relay_id", None)
            if own_id and own_id in self.used_answers:
                if (own_id, relay_id) not in self._dupes_logged and not self.dry_run:  # a duplicate: logged,
                    self._dupes_logged.add((own_id, relay_id))                        # neither acted on nor answered
                    self.ledger.event("duplicate", relay_id=own_id,
                                      data={"run": self.run.id, "line": line, "via": "recipe", "as_answer_to": relay_id})
                    self.say(f"  duplicate answer id {own_id} (already taken in this run): dropped")
                continue
            return Answer(answers=relay_id, relay_id=own_id, hop=env.hop if env else 0,
                          body=env.body if env else line, line=line,
                          peer=(env.sender if env else getattr(msg, "peer", None)), verdict=kind,
                          session=getattr(verdict, "session", None))
        return None

    # -- resume ------------------------------------------------------------------
    def _ledger_state(self, relay_id: str) -> str:
        """What the ledger knows of one send: answered | delivered | pending | not-sent."""
        events = self.ledger.events(relay_id=relay_id)
        outcomes = [e for e in events if e.kind == "outcome"]
        approved = any(e.kind == "answer" and e.data.get("approved") for e in events)
        if outcomes:
            state = outcomes[-1].data.get("state")
            if state in {s.value for s in DELIVERED} | {"replied"}:
                return "delivered"
            if state in ("withheld", "refused", "failed"):
                return "not-sent"
            return "pending"
        return "pending" if approved else "not-sent"

    async def _settle_prior(self, rec: StepRun, prior: StepRun, step: Step, heading: str) -> bool:
        """Resume: a step the stopped run already took. True when it needs no new send."""
        rid = prior.relay_id
        assert rid is not None
        rec.relay_id, rec.hop, rec.delivery = rid, prior.hop, prior.delivery
        where = f"round {rec.round}, step {rec.index} ({step.kind} {rec.target})"
        if prior.answer is not None:
            rec.answer, rec.state = prior.answer, "answered"
            if prior.answer.relay_id:
                self.used_answers.add(prior.answer.relay_id)
            self.say(f"  {where}: answered before as {rid}: not sent again")
            return True
        status = send_status(self.ledger, self.run.id, rid, target=prior.target, body=None) \
            if prior.kind != "forward" else None
        if status is not None and status.status in ("declined", "withheld", "unanswered", "unplanned"):
            self.say(f"  {where}: {rid} {status.not_sent(self.run.id)}; planned and asked again")
            rec.relay_id = None
            rec.hop = prior.hop
            return False
        state = self._ledger_state(rid)
        if state == "pending":
            state = await self._inspect(rec, step, rid)
        if state == "delivered":
            rec.state = "delivered"
            self.say(f"  {where}: {rid} was delivered before: not sent again")
            if step.waits_for_answer:
                await self._wait(rec, step, None)
            return True
        if state == "pending":
            self.say(f"  {where}: no receiver evidence that {rid} arrived; re-sending needs a new plan and your yes")
        rec.relay_id = None
        rec.hop = prior.hop
        return False

    def _check_journal(self) -> None:
        """Every send of the stopped run judged against the ledger before the resume sends anything
        (session/runs/journal.py): a row its journal did not write stops the run here, nothing sent."""
        for prior in self.prior.values():
            if prior.relay_id and prior.kind != "forward":
                try:
                    send_status(self.ledger, self.run.id, prior.relay_id, target=prior.target, body=None)
                except JournalMismatch as exc:
                    raise Stop("stopped", str(exc)) from None

    async def _inspect(self, rec: StepRun, step: Step, rid: str) -> str:
        """Read the receiver's evidence for a send whose outcome is unknown (read-only)."""
        self.say(f"  round {rec.round}, step {rec.index}: the outcome of {rid} is unknown: reading the receiver's "
                 f"evidence (nothing is sent)")
        if self._find_answer(rid, None) is not None:
            self.say(f"  its answer is in the ledger: {rid} was delivered")
            return "delivered"
        plans = self.ledger.events(relay_id=rid, kind="plan")
        if not plans:
            return "pending"
        try:
            plan = Plan.model_validate(plans[-1].data)
        except ValueError:
            return "pending"
        transport = self.session._transports.get(plan.transport)  # read-only: confirm sends nothing
        if transport is None:
            return "pending"
        d = Delivery(relay_id=rid, target=rec.target, transport=plan.transport, plan=plan)
        try:
            tgt = await self.session.target(rec.target)
            await transport.confirm(d, tgt, plan.payload, StageLog(d, self.ledger, echo=self.say), min(step.timeout, 10.0))
        except RelayError as exc:
            self.say(f"  could not read the evidence: {exc}")
            return "pending"
        return "delivered" if d.state in DELIVERED else "pending"

    # -- dry run ---------------------------------------------------------------------
    async def _dry(self, rec: StepRun, step: Step, heading: str) -> StepRun:
        rid = f"{self.session.me.address}-{self._next_n}"
        self._next_n += 1
        rec.relay_id = rid
        if step.kind == "forward":
            self.say(f"{heading}\n  forward the newest reply unchanged to {rec.target}, same id, hop {rec.hop}\n")
            rec.state = "dry-run"
            return rec
        body = render(step.body or "", self._values(rec.round))
        plan = await self.session.preview(rec.target, body, want=step.wants, transport=step.transport, hop=rec.hop or 0,
                                          heading=heading, relay_id=rid)
        self.say(plan.render() + "\n")
        rec.state = "dry-run"
        if step.waits_for_answer:
            hop = (rec.hop or 0) + 1
            rec.answer = Answer(answers=rid, hop=hop, body=f"<reply of {rec.target}, round {rec.round}>", line="")
        return rec


def load_prior(ledger: Any, run_id: str) -> tuple[dict[str, Any], dict[tuple[int, int, str], StepRun], str]:
    """What a stopped run left in the ledger: its run-start data, its steps, its end state."""
    events = ledger.events(relay_id=run_id)
    start = next((e for e in events if e.kind == "run-start"), None)
    if start is None:
        raise RecipeError(f"no recipe run {run_id!r} in the ledger; `relay log` lists recent events")
    check_row(run_id, start)  # its recipe text and parameters as the run wrote them
    steps: dict[tuple[int, int, str], StepRun] = {}
    end = "interrupted"
    for e in events:
        d = e.data
        if e.kind == "run-step":
            rec = StepRun.journaled(JournalSend.read(run_id, e))  # a row the run did not write: not resumed
            steps[rec.key] = rec
        elif e.kind == "run-answer":
            key = (d["round"], d["step"], d["target"])
            if key in steps and steps[key].relay_id == d.get("answers"):
                steps[key].answer = Answer.model_validate(d["answer"])
        elif e.kind == "run-end":
            end = d.get("state") or end
        elif e.kind == "run-resume":
            end = "interrupted"
    return start.data, steps, end


def parse_source(source: str, path: str | None) -> Recipe:
    return parse_recipe(source, path or "<saved run>")


def read_source(path: Path) -> str:
    """A recipe file's text, through the one loader (a FIFO, a directory, a huge or non-UTF-8 file is one line)."""
    from relay_repl.core.recipe import FIX, RecipeFileProblem
    from relay_repl.store.loader import read_text

    return read_text(path, FIX, error=RecipeFileProblem) or ""
