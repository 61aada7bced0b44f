"""The kernel-free notebook: a percent-format file's cells run against `session` (issue 18).

No Jupyter kernel: the cells run in this process, on this event loop, in one namespace
holding `session` and `anyio`, each compiled with the asyncio REPL's flag
(`ast.PyCF_ALLOW_TOP_LEVEL_AWAIT`), so `await session.send(...)` works at a cell's top
level exactly as in the REPL.

What the runner adds to the session, and nothing more:
- a heading on every plan (`notebook triage, run ID, cell 3 "ask everyone"`), added by
  the run's approver hook (session/core/hooks.py), which wraps the session's approver for the
  run, so the gate itself is the REPL's (its y/N, its answer type) and is only ever
  reached through the session;
- what each cell printed, the repr of its last expression, the plans it showed with the
  answers, the deliveries it made with their final state, reply and verdict, and its
  error, written beside the file as `<stem>.relay/<run id>/cells.jsonl` and a readable
  `report.md` (no times in the report, so it diffs cleanly in git);
- the run's `send` hook (the replay stage of `session.send`) records each call (cell,
  call number, target, body, want, relay id) in the ledger under the run id BEFORE the
  gate is asked, so `--resume RUN` can answer the calls
  of the cells already run from the ledger instead of sending again;
- `--dry-run`: every send shows its plan (session.preview) and returns a `withheld`
  delivery whose waits return at once with nothing; nothing is sent or written to the
  ledger;
- what a cell prints, kept through the cell's own `print` (its namespace's: the terminal
  still shows it), and the session's progress lines shown meanwhile, through the run's echo
  hook (when they go where the cell's prints go), never by replacing `sys.stdout`.

The run stops at the first cell that raises (later cells are not run). Ctrl-C stops the
running cell; what it printed is kept and the run can be resumed.
"""

from __future__ import annotations

import inspect
import io
import math
import os
import secrets
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, Field

from relay_repl.core.controls import visible
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.errors import RelayError, UsageError
from relay_repl.core.notebook_cells import (Cell, Notebook, NotebookError, compile_cell, convert_param, injected_cell,
                                            looks_like_target, parse_cells)
from relay_repl.core.plan import Plan
from relay_repl.session.core.gate import ApproveFn
from relay_repl.session.core.hooks import Echo, Proceed, RunHooks
from relay_repl.session.runs.journal import JournalMismatch, SendStatus, check_row, sealed, send_status
from relay_repl.session.runs.send_journal import JournalSend
from relay_repl.session.core.send_request import SendRequest
from relay_repl.session.core.sendoptions import SendOptions
from relay_repl.system.polling import poll_until

JOURNAL_ROWS = ("notebook-start", "notebook-send", "notebook-answer")
"""The rows a run writes of its start (file, parameters), its sends and the operator's answers, each sealed
with its digest."""

PROGRESS_FIRST = 5.0   # a cell quiet this long gets a progress line on stderr ...
PROGRESS_EVERY = 10.0  # ... and another this often while it waits


class PlanShown(BaseModel):
    heading: str
    target: str
    transport: str
    relay_id: str | None
    payload: str
    answer: str = Field(description="approved | declined | dry run | replayed from the ledger")


class SendRecord(BaseModel):
    """A delivery a cell made, as it stood when the cell ended."""

    relay_id: str | None
    target: str
    transport: str
    state: str
    outcome: str
    reason: str | None = None
    reply: str | None = None
    reply_id: str | None = None
    verdict: str | None = None
    replayed: bool = Field(default=False, description="answered from the ledger on --resume: not sent again")


class CellRecord(BaseModel):
    index: int
    kind: str
    title: str
    sha256: str
    source: str
    parameters: dict[str, Any] | None = None
    started: float | None = None
    ended: float | None = None
    state: str = "not run"  # done | error | interrupted | not run | prose
    stdout: str = ""
    result: str | None = None
    plans: list[PlanShown] = Field(default_factory=list)
    deliveries: list[SendRecord] = Field(default_factory=list)
    error: str | None = None


class NotebookRun(BaseModel):
    """What `relay notebook run` returns and keeps in run.json."""

    id: str
    notebook: str
    path: str
    params: dict[str, Any] = Field(default_factory=dict)
    dry_run: bool = False
    resumed_from: str | None = None
    state: str = "running"  # done | error | interrupted | stopped
    reason: str | None = None
    started: float = Field(default_factory=time.time)
    ended: float | None = None
    cells: list[CellRecord] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 0 if self.state == "done" else 1


def new_run_id() -> str:
    """Sortable by start (so `show` finds the newest by name) and unique."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)


def outputs_root(path: Path) -> Path:
    """Beside the notebook, except for a notebook shipped inside the installed package (a
    wheel's site-packages is no place for a run's outputs): those go under the state dir."""
    import relay_repl
    from relay_repl.store.paths import state_dir

    pkg = Path(relay_repl.__file__).resolve().parent
    try:
        inside = path.resolve().is_relative_to(pkg)
    except (OSError, RuntimeError):  # a loop of links, a name too long: no shipped notebook; the read says why
        inside = False
    if inside:
        return state_dir(create=False) / "notebooks" / (path.stem + ".relay")
    return path.with_name(path.stem + ".relay")


NOTEBOOK_FIX = "give a notebook: a UTF-8 Python file of `# %%` cells"
RUN_MAX_BYTES = 64 * 1024 * 1024
"""A run's outputs hold what its cells printed: more than a hand-written file, still read whole."""
RUN_FIX = ("it is a run's output, written by relay, so it was edited or cut short: the ledger still holds what "
           "the run did (`relay why RUN`); restore the file, or remove that run's folder and start a new run "
           "(`relay notebook run FILE`)")


def read_notebook(path: Path) -> Notebook:
    from relay_repl.core.notebook_cells import NotebookFileProblem
    from relay_repl.store.loader import read_text

    text = read_text(path, NOTEBOOK_FIX, error=NotebookFileProblem) or ""
    return parse_cells(text, str(path))


class _Tee(io.TextIOBase):
    """Where a cell's `print` writes while it runs: the terminal still shows everything, and
    what was written is kept for the cell's record."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.buf: list[str] = []

    def write(self, s: str) -> int:
        self.buf.append(s)
        return self.real.write(s)

    def flush(self) -> None:
        self.real.flush()

    def isatty(self) -> bool:
        return bool(self.real.isatty())

    def fileno(self) -> int:
        return int(self.real.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.real, "encoding", "utf-8"))

    def keep(self, s: str) -> None:
        """Kept for the cell's record only (shown on the terminal by someone else)."""
        self.buf.append(s)

    def take(self) -> str:
        out = "".join(self.buf)
        self.buf.clear()
        return out


def _printer(tee: _Tee) -> Callable[..., None]:
    """The `print` of a cell's namespace: to the run's tee unless told another file."""

    def print_(*values: object, sep: str | None = " ", end: str | None = "\n", file: Any = None,
               flush: bool = False) -> None:
        print(*values, sep=sep, end=end, file=tee if file is None else file, flush=flush)

    return print_


class NotebookRunner(RunHooks):
    """Runs (or dry-runs, or resumes) one notebook file on one session; its hooks (session/core/hooks.py)
    are on the session's send path while it runs."""

    def __init__(self, session: Any, path: Path, raw_params: dict[str, str] | None = None, *, dry_run: bool = False,
                 resume: str | None = None, say: Callable[[str], None] | None = None,
                 progress: Callable[[str], None] | None = None, out: Any = None,
                 keep_echo: bool | None = None) -> None:
        self.session = session
        self.path = Path(path)
        self.nb = read_notebook(self.path)
        self.raw_params = dict(raw_params or {})
        self.dry_run = dry_run
        self.resume = resume
        self.say = say or (lambda s: print(s, flush=True))
        self.progress = progress or (lambda s: print(s, file=sys.stderr, flush=True))
        self.out = out  # where a cell's prints go (the terminal); None: sys.stdout as it is at run time
        # the session's progress lines shown while a cell runs are kept in its record too when they are
        # shown where the cell's prints are (default: when the session echoes to standard output)
        self.keep_echo = session.shared.echoes_to_stdout if keep_echo is None else keep_echo
        self.run = NotebookRun(id=new_run_id(), notebook=self.path.stem, path=str(self.path), dry_run=dry_run,
                               resumed_from=resume)
        self.dir = outputs_root(self.path) / self.run.id
        self.params: dict[str, Any] = {}
        self.cell: Cell | None = None
        self.rec: CellRecord | None = None
        self.calls = 0
        self.cell_ids: list[str] = []
        self.ids_of: dict[int, list[str]] = {}  # cell index -> the relay ids its sends took
        self.cell_started = 0.0
        self.in_gate = False
        self.tee: _Tee | None = None
        self.prior: dict[tuple[int, int], JournalSend] = {}  # (cell, call) -> the stopped run's send
        self.prior_status: dict[str, SendStatus] = {}  # relay id -> what the ledger proves of the stopped run's send
        self.notes: dict[str, list[str]] = {}  # relay id -> plan notes (the same send in an earlier run)
        self._dry_n = 0

    # -- before any cell ---------------------------------------------------------
    async def check_params(self) -> dict[str, Any]:
        """Each `-p` typed by its default; a target default's value must resolve to a live target."""
        defaults = self.nb.defaults()
        values: dict[str, Any] = {}
        for name, raw in self.raw_params.items():
            values[name] = convert_param(name, raw, defaults, str(self.path))
            if looks_like_target(defaults[name]):
                try:
                    tgt = await self.session.target(values[name])
                except RelayError as exc:
                    raise NotebookError(f"{self.path}: -p {name}={raw}: {exc}") from None
                if not tgt.live:
                    raise NotebookError(f"{self.path}: -p {name}={raw}: {tgt.spec} is not running")
        self.params = values
        self.run.params = values
        return values

    def _cells(self) -> list[Cell]:
        """The cells in the order they run, the injected parameters right after the parameters cell."""
        out: list[Cell] = []
        params_cell = self.nb.parameters_cell
        for c in self.nb.cells:
            out.append(c)
            if c is params_cell and self.params:
                out.append(injected_cell(c, self.params))
        if self.params and params_cell is None:  # cannot happen: convert_param refused every name
            raise UsageError("parameters given to a notebook without a parameters cell")
        for i, c in enumerate(out, 1):
            c.index = i
        return out

    # -- the run ------------------------------------------------------------------------
    def heading(self) -> str:
        label = self.cell.label if self.cell is not None else "before any cell"
        dry = " (dry run: nothing is sent)" if self.dry_run else ""
        return f"notebook {self.nb_name}, run {self.run.id}, {label}{dry}"

    @property
    def nb_name(self) -> str:
        return self.path.stem

    async def execute(self) -> NotebookRun:
        if self.resume:
            self._load_prior(self.resume)
        if not self.session._refreshed:
            await self.session.refresh()
        await self.check_params()
        cells = self._cells()
        self.run.cells = [CellRecord(index=c.index, kind=c.kind, title=c.title, sha256=c.sha256, source=c.source,
                                     parameters=self.params if "injected-parameters" in c.tags else None,
                                     state="prose" if c.kind != "code" else "not run") for c in cells]
        self.dir.mkdir(parents=True, exist_ok=True)
        self._write_run()
        self._event("notebook-start", path=str(self.path.resolve()), params=self.params, resumed_from=self.resume,
                    cells=[{"index": c.index, "title": c.title, "sha256": c.sha256} for c in cells])
        self.tee = _Tee(self.out or sys.stdout)
        namespace: dict[str, Any] = {"session": self.session, "anyio": anyio, "__name__": "__main__",
                                     "__file__": str(self.path), "print": _printer(self.tee)}
        try:
            with self.session.running(self):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._progress_loop)
                    try:
                        for c, rec in zip(cells, self.run.cells):
                            if c.kind != "code":
                                continue
                            if not await self._run_cell(c, rec, namespace):
                                break
                        else:
                            self.run.state = "done"
                    finally:
                        tg.cancel_scope.cancel()
        finally:
            if self.run.state == "running":
                self.run.state = "interrupted"
                self.run.reason = self.run.reason or "interrupted (Ctrl-C)"
            self.run.ended = time.time()
            self._event("notebook-end", state=self.run.state, reason=self.run.reason)
            self._refresh_deliveries()
            self._rewrite_cells()  # appended cell by cell while running; now with every delivery's final state
            self._write_run()
            diagram = None
            if not self.dry_run:  # the exchange's picture beside the report, embedded in it
                from relay_repl.session.runs.exchange_report import DIAGRAM, write_exchange_svg

                diagram = write_exchange_svg(self.session.ledger, self.run.id, self.dir / DIAGRAM)
            write_report(self.run, self.dir, diagram=diagram)
            if self.run.state == "interrupted" and not self.dry_run:
                self.progress(f"relay: notebook {self.nb_name} run {self.run.id} interrupted; continue it with "
                              f"`relay notebook run {self.path} --resume {self.run.id}` (sends already made are not "
                              "sent again)")
        return self.run

    async def _run_cell(self, cell: Cell, rec: CellRecord, ns: dict[str, Any]) -> bool:
        """One cell; False when the run stops here."""
        assert self.tee is not None
        self.cell, self.rec, self.calls, self.cell_ids = cell, rec, 0, []
        self.cell_started = time.monotonic()
        rec.started = time.time()
        rec.state = "running"
        try:
            body, last = compile_cell(cell, str(self.path))
            value = await _eval(body, ns)
            if last is not None:
                value = await _eval(last, ns)
                if value is not None:
                    rec.result = repr(value)
                    print(rec.result, file=self.tee.real, flush=True)  # shown as the REPL shows it; kept apart
            rec.state = "done"
        except (ResumeMismatch, JournalMismatch) as exc:
            rec.state, rec.error = "error", str(exc)
            self.run.state, self.run.reason = "stopped", str(exc)
            self.progress(f"relay: {exc}")
        except Exception as exc:  # the cell's own error: shown under it, and the run stops here
            rec.state = "error"
            rec.error = _cell_traceback(exc, str(self.path))
            print(rec.error, end="", file=self.tee.real, flush=True)  # kept apart from what the cell printed
            self.run.state, self.run.reason = "error", f"{cell.label} raised {type(exc).__name__}: {exc}"
        except BaseException:  # Ctrl-C, a cancelled run: keep what it printed, leave the run resumable
            rec.state, rec.error = "interrupted", "interrupted (Ctrl-C) while the cell ran"
            self.run.reason = f"interrupted in {cell.label}"
            raise
        finally:
            rec.ended = time.time()
            rec.stdout = self.tee.take()
            self.ids_of[rec.index] = list(self.cell_ids)
            self._refresh_deliveries()
            self._append_cell(rec)
            self.cell = None
        return rec.state == "done"

    async def _progress_loop(self) -> None:
        """While a cell runs long (a send confirming, a wait for a reply), say which and for how long.
        A look every second for as long as the run lasts (its task group cancels it)."""
        last = 0.0

        async def look() -> None:
            nonlocal last
            if self.cell is None or self.in_gate:
                return None
            ran = time.monotonic() - self.cell_started
            if ran >= PROGRESS_FIRST and time.monotonic() - last >= PROGRESS_EVERY:
                last = time.monotonic()
                self.progress(f"  … {self.heading()}: running for {ran:.0f} s")
            return None

        await poll_until(look, timeout=math.inf, interval=1.0)

    # -- what the session does for the cells ------------------------------------------
    def approver(self, original: ApproveFn) -> ApproveFn:
        """The session's approver for the run: every plan headed with where the run stands (and
        notes of the same send in an earlier run); a dry run shows the plan and answers no itself."""

        async def approve(plan: Plan) -> Any:
            heading = self.heading()
            if self.dry_run:  # any other side effect a cell asks for (forward, reply, listing the inbox): shown, not done
                real = self.tee.real if self.tee is not None else sys.stdout
                print(plan.model_copy(update={"heading": heading}).render() + "\ndry run: not done", file=real,
                      flush=True)
                if self.rec is not None:
                    self.rec.plans.append(PlanShown(heading=heading, target=plan.target.split(" ")[0],
                                                    transport=plan.transport, relay_id=plan.relay_id,
                                                    payload=plan.payload, answer="dry run"))
                return False
            shown = plan.model_copy(update={"heading": f"{heading}: {plan.heading}" if plan.heading else heading,
                                            "notes": plan.notes + tuple(self.notes.get(plan.relay_id or "", ()))})
            self.in_gate = True  # the prompt is not the cell's output (the gate writes to the terminal itself)
            try:
                answer = await original(shown)
            finally:
                self.in_gate = False
            if plan.relay_id:  # the run's own record of the operator's answer, before the gate records its own
                self._event("notebook-answer", relay_id=plan.relay_id, approved=_approved(answer))
            if self.rec is not None:
                self.rec.plans.append(PlanShown(heading=heading, target=plan.target.split(" ")[0], transport=plan.transport,
                                                relay_id=plan.relay_id, payload=plan.payload,
                                                answer="approved" if _approved(answer) else "declined"))
            return answer

        return approve

    def echo(self, echo: Echo | None) -> Echo | None:
        """The session's progress lines while a cell runs (not the gate's): shown as before, and kept in
        the cell's record beside what it printed (when `keep_echo`)."""
        if echo is None or not self.keep_echo:
            return echo

        def kept(line: str) -> None:
            if self.tee is not None and self.cell is not None and not self.in_gate:
                self.tee.keep(line + "\n")
            echo(line)

        return kept

    async def send(self, req: SendRequest, proceed: Proceed) -> Delivery:
        """session.send for the run (its replay stage): recorded for resume, answered from the ledger
        when resuming, and a plan only in a dry run."""
        target, body, options = req.target, req.body, req.options
        if options.fallback is not None:  # one member of a chain: the chain's own call was recorded already
            return await proceed(req)
        want = options.want
        cell = self.cell
        self.calls += 1
        n = self.calls
        index = cell.index if cell is not None else 0
        if self.dry_run:
            return await self._dry_send(target, body, options)
        tgt = await self.session.target(target)
        prior = self.prior.get((index, n))
        if prior is not None:
            self._same_cell(prior, tgt.spec, body, want, cell)
            status = self.prior_status[prior.relay_id]
            if status.sent:
                return await self._replay(prior, tgt.spec, body, want, cell)
            # declined, withheld, killed at the prompt: shown as such, then planned and asked again under
            # the same id (a receiver that somehow holds it takes the second as a duplicate)
            print(f"{self.heading()}: {prior.relay_id} to {tgt.spec} {status.not_sent(str(self.resume))}; "
                  "planned and asked again", file=self.tee)
            req = req.with_options(relay_id=prior.relay_id)
            options = req.options
        rid = options.relay_id or self.session.ledger.next_id(self.session.me.address)
        key = self._send_key(index, tgt.spec, body)
        earlier = self._sent_before(key)
        if earlier:
            self.notes[rid] = earlier
        self._journal(JournalSend(runner="notebook", at=(index, n), sha256=cell.sha256 if cell else None,
                                  target=tgt.spec, body=body, want=want, relay_id=rid, path=str(self.path.resolve())))
        if not self.dry_run:  # found again by an indexed key, however long the ledger grows
            self.session.ledger.event("notebook-sent", relay_id=key, data={"run": self.run.id, "relay_id": rid})
        self.cell_ids.append(rid)
        return await proceed(req.to(tgt).with_options(relay_id=rid))

    async def _dry_send(self, target: Any, body: str, options: SendOptions) -> Delivery:
        want = options.want
        addr = self.session.me.address
        if self._dry_n == 0:
            self._dry_n = int(self.session.ledger.peek_next_id(addr).rsplit("-", 1)[1])
        rid = f"{addr}-{self._dry_n}"
        self._dry_n += 1
        self.cell_ids.append(rid)
        plan = await self.session.preview(target, body, want=want, transport=options.transport,
                                          to_role=options.to_role, hop=options.hop,
                                          heading=self.heading(), relay_id=rid)
        real = self.tee.real if self.tee is not None else sys.stdout  # as the gate's plan: not the cell's output
        print(plan.render() + "\ndry run: not sent", file=real, flush=True)
        d = Delivery(relay_id=rid, target=(await self.session.target(target)).spec, transport=plan.transport,
                     plan=plan, state=DeliveryState.WITHHELD, stage="gate", reason="dry run: nothing was sent",
                     want=want)

        async def nothing(_d: Delivery, _timeout: float) -> None:
            return None

        d._waiter = nothing
        self.session.deliveries.append(d)
        if self.rec is not None:
            self.rec.plans.append(PlanShown(heading=self.heading(), target=d.target, transport=plan.transport,
                                            relay_id=rid, payload=plan.payload, answer="dry run"))
        return d

    def _send_key(self, cell: int, spec: str, body: str) -> str:
        """One key per (notebook file, cell, target, body): what "the same send" means across runs."""
        import hashlib

        raw = "\0".join((str(self.path.resolve()), str(cell), spec, body))
        return "notebook-send:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:24]

    def _sent_before(self, key: str) -> list[str]:
        """Notes for a plan whose target and body match a delivery an earlier run of this
        notebook made from the same cell: its id, when, and its final state."""
        import datetime as dt

        led = self.session.ledger
        notes = []
        for e in led.events(relay_id=key, kind="notebook-sent"):
            if e.data.get("run") == self.run.id:
                continue
            rid = e.data["relay_id"]
            outcomes = [o for o in led.events(relay_id=rid) if o.kind == "outcome"]
            state = outcomes[-1].data.get("state") if outcomes else "no outcome recorded"
            when = dt.datetime.fromtimestamp(e.at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            notes.append(f"sent before from this cell: {rid} (run {e.data.get('run')}, {when}), {state}")
        return notes[-3:]

    # -- resume ---------------------------------------------------------------------------
    def _load_prior(self, run_id: str) -> None:
        events = self.session.ledger.events(relay_id=run_id)
        start = next((e for e in events if e.kind == "notebook-start"), None)
        if start is None:
            raise NotebookError(f"no notebook run {run_id!r} in the ledger; `relay notebook show {self.path}` names "
                                "the runs of this notebook")
        if start.data.get("path") != str(self.path.resolve()):
            raise NotebookError(f"run {run_id} was of {start.data.get('path')}, not {self.path.resolve()}")
        ends = [e for e in events if e.kind == "notebook-end"]
        if ends and ends[-1].data.get("state") == "done":
            raise NotebookError(f"run {run_id} already finished; start a new one without --resume")
        if not self.raw_params:
            self.raw_params = {k: ",".join(map(str, v)) if isinstance(v, list) else str(v)
                               for k, v in (start.data.get("params") or {}).items()}
        answers: dict[str, bool] = {}
        for e in events:
            if e.kind in JOURNAL_ROWS:
                check_row(run_id, e)  # a row the run did not write (edited, inserted by hand) stops it here
            if e.kind == "notebook-send":
                sent = JournalSend.read(run_id, e)
                self.prior[sent.at] = sent
            elif e.kind == "notebook-answer" and e.data.get("relay_id"):
                answers[str(e.data["relay_id"])] = bool(e.data.get("approved"))
        for prior in self.prior.values():  # every send of the stopped run judged before any cell runs
            rid = prior.relay_id
            self.prior_status[rid] = send_status(self.session.ledger, run_id, rid, target=prior.target,
                                                 body=str(prior.body), approved_in_journal=answers.get(rid, False))

    def _same_cell(self, prior: JournalSend, spec: str, body: str, want: Any, cell: Cell | None) -> None:
        label = cell.label if cell is not None else "a cell"
        if cell is not None and prior.sha256 != cell.sha256 or (prior.target, prior.body,
                                                                prior.want) != (spec, body, want):
            raise ResumeMismatch(f"{self.path}: {label} changed since run {self.resume} (send {prior.at[1]} there "
                                 f"was {prior.want} to {prior.target}: {str(prior.body)[:60]!r}): not resumed, "
                                 "nothing was sent; start a new run instead")

    async def _replay(self, prior: JournalSend, spec: str, body: str, want: Any, cell: Cell | None) -> Delivery:
        d = rebuild_delivery(self.session, prior.relay_id, spec, want)
        self.cell_ids.append(prior.relay_id)
        self.session.deliveries.append(d)
        # recorded under this run too, so a resume of this run answers the same call the same way
        self._journal(JournalSend(runner="notebook", at=prior.at, sha256=prior.sha256, target=spec, body=body,
                                  want=want, relay_id=str(d.relay_id), replayed_from=self.resume))
        self._event("notebook-answer", relay_id=d.relay_id, approved=True, replayed_from=self.resume)
        if self.rec is not None:
            self.rec.plans.append(PlanShown(heading=self.heading(), target=spec, transport=d.transport,
                                            relay_id=d.relay_id, payload=d.plan.payload if d.plan else body,
                                            answer="replayed from the ledger"))
        print(f"{self.heading()}: {d.relay_id} to {spec} was sent in run {self.resume} ({d.state.value}): "
              "not sent again", file=self.tee)
        return d

    # -- records --------------------------------------------------------------------------
    def _refresh_deliveries(self) -> None:
        """Each run cell's deliveries (by the relay ids handed out while it ran) as they stand now:
        a reply that came while a later cell waited is its final state, shown under the cell that sent."""
        latest: dict[str, Delivery] = {d.relay_id: d for d in self.session.deliveries if d.relay_id}
        for rec in self.run.cells:
            ids = self.ids_of.get(rec.index)
            if ids:
                rec.deliveries = [send_record(latest[rid]) for rid in ids if rid in latest]

    def _journal(self, sent: JournalSend) -> None:
        """The run's journal row for one send (session/runs/send_journal.py), before the gate is asked."""
        self._event(sent.row_kind, **sent.row())

    def _event(self, kind: str, **data: Any) -> None:
        if not self.dry_run:
            row = {"run": self.run.id, **data}
            self.session.ledger.event(kind, relay_id=self.run.id, data=sealed(kind, row) if kind in JOURNAL_ROWS else row)

    def _append_cell(self, rec: CellRecord) -> None:
        with (self.dir / "cells.jsonl").open("a", encoding="utf-8") as f:
            f.write(rec.model_dump_json(exclude={"source"}) + "\n")

    def _rewrite_cells(self) -> None:
        ran = [rec for rec in self.run.cells if rec.kind == "code" and rec.started is not None]
        tmp = self.dir / "cells.jsonl.tmp"
        tmp.write_text("".join(rec.model_dump_json(exclude={"source"}) + "\n" for rec in ran), encoding="utf-8")
        tmp.replace(self.dir / "cells.jsonl")

    def _write_run(self) -> None:
        tmp = self.dir / "run.json.tmp"
        tmp.write_text(self.run.model_dump_json(indent=1), encoding="utf-8")
        tmp.replace(self.dir / "run.json")


class ResumeMismatch(RelayError):
    """A resumed cell's send does not match what the stopped run recorded: nothing is sent."""


def _approved(answer: Any) -> bool:
    """The gate's answer as yes/no, whether it is a bool or an object with `approved`."""
    got = getattr(answer, "approved", answer)
    return bool(got)


async def _eval(code: Any, ns: dict[str, Any]) -> Any:
    value = eval(code, ns)  # noqa: S307 - the operator's own cell, run as the REPL runs a line
    if code.co_flags & inspect.CO_COROUTINE:
        value = await value
    return value


def _cell_traceback(exc: BaseException, path: str) -> str:
    """The traceback from the cell's own frames on (the runner's frames are not the operator's)."""
    frames = traceback.extract_tb(exc.__traceback__)
    keep = [f for f in frames if f.filename == path]
    first = frames.index(keep[0]) if keep else len(frames)
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames[first:])]
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


def rebuild_delivery(session: Any, relay_id: str, spec: str, want: str) -> Delivery:
    """The Delivery a stopped run made, from the ledger: its plan, final state and verified reply.
    Its wait returns the recorded reply; with none recorded yet it waits on the live inbox."""
    led = session.ledger
    events = led.events(relay_id=relay_id)
    plan = next((Plan.model_validate(e.data) for e in reversed(events) if e.kind == "plan"), None)
    outcomes = [e for e in events if e.kind in ("outcome", "stage", "linked", "no-reply") and e.data.get("state")]
    state = DeliveryState(outcomes[-1].data["state"]) if outcomes else DeliveryState.UNKNOWN
    d = Delivery(relay_id=relay_id, target=spec, transport=plan.transport if plan else "unknown", plan=plan,
                 state=state, want=want, stage="resumed")
    d.extra.replayed = True
    for msg in led.inbox(answers=relay_id):
        d.replies.append(msg)
        if d.reply is None and msg.verdict is not None and msg.verdict.ok:
            d.reply = msg
            d.state = DeliveryState.ACKNOWLEDGED if want == "ack" else DeliveryState.REPLIED
    if d.reply is None and want != "none":
        d._waiter = session._wait_reply  # not answered yet: the answer may still come to this run's inbox
    return d


def send_record(d: Delivery) -> SendRecord:
    v = d.reply.verdict if d.reply is not None else None
    return SendRecord(relay_id=d.relay_id, target=d.target, transport=d.transport, state=d.state.value,
                      outcome=d.outcome, reason=d.reason, reply=d.reply.body if d.reply is not None else None,
                      reply_id=d.reply.relay_id if d.reply is not None else None,
                      verdict=v.verdict if v is not None else None, replayed=d.extra.replayed)


# -- the report ---------------------------------------------------------------------------
def render_report(run: NotebookRun, diagram: Path | None = None) -> str:
    """Stable Markdown of the run's cells and outputs: no times, so two reports diff cleanly;
    `diagram` (the exchange's SVG beside it) is embedded after the summary."""
    out = [f"# notebook {run.notebook}, run {run.id}", ""]
    if run.dry_run:
        out += ["**Dry run**: every send showed its plan and was not sent.", ""]
    if run.resumed_from:
        out += [f"Resumed from run {run.resumed_from}: its sends were answered from the ledger, not sent again.", ""]
    out.append(f"- file: `{run.path}`")
    if run.params:
        out.append("- parameters: " + ", ".join(f"`{k} = {v!r}`" for k, v in run.params.items()))
    out.append(f"- state: {run.state}" + (f" ({run.reason})" if run.reason else ""))
    out.append("")
    if diagram is not None:
        from relay_repl.session.runs.exchange_report import embed

        out += embed(diagram)
    for c in run.cells:
        title = f' "{c.title}"' if c.title else ""
        if c.kind != "code":
            out += [f"## cell {c.index}{title} ({c.kind})", "", c.source, ""]
            continue
        out += [f"## cell {c.index}{title}: {c.state}", "", *_fenced("python", c.source), ""]
        if c.parameters:
            out += ["Parameters injected: " + ", ".join(f"`{k} = {v!r}`" for k, v in c.parameters.items()), ""]
        for p in c.plans:
            out.append(f"- plan {p.relay_id or ''} to {p.target} via {p.transport}: **{p.answer}**")
        if c.plans:
            out.append("")
        # what a cell printed and a peer's reply can hold a peer's words: shown, never acted on by a terminal
        if c.stdout.strip():
            out += ["Output:", "", *_fenced("text", visible(c.stdout.rstrip("\n"), keep_newlines=True)), ""]
        if c.result is not None:
            out += ["Result:", "", *_fenced("text", visible(c.result, keep_newlines=True)), ""]
        if c.deliveries:
            out += ["| relay id | target | state | verdict | reply |", "|---|---|---|---|---|"]
            for d in c.deliveries:
                reply = _inert_cell(visible((d.reply or (d.reason or "")).replace("|", "\\|").replace("\n", " ")))
                out.append(f"| {d.relay_id or ''} | {d.target} | {d.state}{' (replayed)' if d.replayed else ''} | "
                           f"{d.verdict or ''} | {reply} |")
            out.append("")
        if c.error:
            out += ["Error:", "", *_fenced("text", visible(c.error.rstrip("\n"), keep_newlines=True)), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _ticks(text: str) -> int:
    import re

    return max((len(m) for m in re.findall(r"`+", text)), default=0)


def _fenced(lang: str, text: str) -> list[str]:
    """`text` in a code block its own lines cannot close: the fence is longer than any run of
    backticks inside (CommonMark). A peer's reply printed by a cell holding a ``` line closed the
    three-backtick fence, and what followed (an image fetched from anywhere when the report is
    viewed, a forged heading) rendered as the report's own markdown."""
    fence = "`" * max(3, _ticks(text) + 1)
    return [f"{fence}{lang}", text, fence]


def _inert_cell(text: str) -> str:
    """A reply in the deliveries table as words: what would open an image, a link or HTML is escaped
    (`![x](http://...)` rendered as an image fetched from anywhere when the report was viewed)."""
    return text.replace("[", "\\[").replace("<", "&lt;")


def write_report(run: NotebookRun, where: Path, *, diagram: Path | None = None) -> Path:
    path = where / "report.md"
    path.write_text(render_report(run, diagram), encoding="utf-8")
    return path


def runs_of(path: Path) -> list[Path]:
    root = outputs_root(Path(path))
    try:
        if not root.is_dir():
            return []
        # any entry named run.json (a directory or a FIFO there too): load_run says what is wrong with it
        return sorted(p for p in root.iterdir() if os.path.lexists(p / "run.json"))
    except OSError as exc:  # a name too long for the file system, a loop of links, no permission: one line
        shown = str(root) if len(str(root)) <= 200 else str(root)[:200] + "…"
        raise UsageError(f"cannot read the runs of {shown} ({exc.strerror or exc}): "
                         f"name the notebook file, FILE.py") from None


def load_run(path: Path, run_id: str | None = None) -> tuple[NotebookRun, Path]:
    """The newest (or the named) run of a notebook, from its run.json."""
    runs = runs_of(path)
    if not runs:
        raise UsageError(f"no run of {path} yet (looked in {outputs_root(Path(path))}): "
                         f"`relay notebook run {path}` makes one")
    if run_id is None:
        chosen = runs[-1]
    else:
        hits = [p for p in runs if p.name == run_id]
        if not hits:
            raise UsageError(f"no run {run_id} of {path}; known: {', '.join(p.name for p in runs[-5:])}")
        chosen = hits[0]
    from relay_repl.core.notebook_cells import NotebookFileProblem
    from relay_repl.store.loader import load_json

    run = load_json(chosen / "run.json", NotebookRun, RUN_FIX, max_bytes=RUN_MAX_BYTES, error=NotebookFileProblem)
    assert run is not None  # not missing_ok: an absent file is a FileProblem
    return run, chosen


def export_ipynb(path: Path, run_id: str | None, out: Path) -> Path:
    """A real nbformat-4 notebook of a run, for reading in Jupyter, JupyterLab or on a code host:
    the cells, and that run's outputs as stream and execute_result outputs. No kernelspec is
    written: nothing names a kernel that could run it (it runs only through `relay`)."""
    try:
        import nbformat
        from nbformat import v4
    except ImportError:
        raise UsageError("exporting to .ipynb needs nbformat: pip install nbformat") from None
    run, _ = load_run(path, run_id)
    cells = []
    count = 0
    for c in run.cells:
        if c.kind == "markdown":
            cells.append(v4.new_markdown_cell(c.source))
            continue
        if c.kind == "raw":
            cells.append(v4.new_raw_cell(c.source))
            continue
        outputs = []
        if c.stdout:
            outputs.append(v4.new_output("stream", name="stdout", text=c.stdout))
        ran = c.state in ("done", "error", "interrupted")
        count += 1 if ran else 0
        if c.result is not None:
            outputs.append(v4.new_output("execute_result", data={"text/plain": c.result}, execution_count=count))
        if c.error:
            outputs.append(v4.new_output("stream", name="stderr", text=c.error))
        meta: dict[str, Any] = {"relay": {"state": c.state, "sha256": c.sha256,
                                          "plans": [p.model_dump() for p in c.plans],
                                          "deliveries": [d.model_dump() for d in c.deliveries]}}
        if c.title:
            meta["title"] = c.title
        if c.title == "injected-parameters":
            meta["tags"] = ["injected-parameters"]
        cells.append(v4.new_code_cell(c.source, outputs=outputs, execution_count=count if ran else None,
                                      metadata=meta))
    nb = v4.new_notebook(cells=cells, metadata={
        "language_info": {"name": "python"},
        "relay": {"run": run.id, "notebook": run.path, "state": run.state, "dry_run": run.dry_run,
                  "params": run.params, "note": "outputs of a `relay notebook run`; run it with relay, not a kernel"}})
    nbformat.validate(nb)
    out = Path(out)
    out.write_text(nbformat.writes(nb), encoding="utf-8")
    return out


class ReplInput(BaseModel):
    """One input typed in the REPL, whether it ran without error, and the repr of its value."""

    text: str
    ok: bool
    result: str | None = None


def notebook_from_inputs(inputs: list[ReplInput], title: str) -> str:
    """Percent-format text of the inputs that ran without error, one cell each, in order
    (a `session.save_notebook(...)` line itself is left out)."""
    lines = ["# %% [markdown]", f"# # {title}", "# Saved from a relay REPL session: each cell is an input that ran "
             "without error.", "# Run it with `relay notebook run FILE.py` (`--dry-run` shows every plan first).", ""]
    n = 0
    for i in inputs:
        if not i.ok or not i.text.strip() or "save_notebook(" in i.text:
            continue
        n += 1
        lines += [f"# %% input {n}", i.text.rstrip("\n"), ""]
    if n == 0:
        raise UsageError("no input of this REPL session ran without error yet: nothing to save")
    return "\n".join(lines)


def save_notebook(session: Any, name: str, *, overwrite: bool = False) -> Path:
    """Write the REPL session's successful inputs as `./NAME.py` (or a NAME.py path), with a first
    report beside it from their values; refuses to overwrite unless asked."""
    import re

    path = Path(name if name.endswith(".py") else f"{name}.py")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", path.stem):
        raise UsageError(f"notebook name {path.stem!r} must be letters, digits, _ or -")
    if path.is_symlink():  # a dangling link was written through: the notebook landed wherever it pointed
        raise UsageError(f"{path} is a symbolic link: a notebook is written only as a file of its own; pick another name")
    if path.exists() and not overwrite:
        raise UsageError(f"{path} exists: pick another name or pass overwrite=True")
    inputs = [i if isinstance(i, ReplInput) else ReplInput.model_validate(i) for i in session.repl_inputs]
    text = notebook_from_inputs(inputs, path.stem)
    nb = parse_cells(text, str(path))  # what is written must load
    path.write_text(text, encoding="utf-8")
    kept = [i for i in inputs if i.ok and i.text.strip() and "save_notebook(" not in i.text]
    run = NotebookRun(id=new_run_id() + "-repl", notebook=path.stem, path=str(path), state="done",
                      reason="saved from a REPL session: the values its inputs had there")
    results = iter(kept)
    for c in nb.cells:
        got = next(results) if c.kind == "code" else None
        run.cells.append(CellRecord(index=c.index, kind=c.kind, title=c.title, sha256=c.sha256, source=c.source,
                                    state="done" if c.kind == "code" else "prose",
                                    result=got.result if got is not None else None))
    where = outputs_root(path) / run.id
    where.mkdir(parents=True, exist_ok=True)
    (where / "run.json").write_text(run.model_dump_json(indent=1), encoding="utf-8")
    write_report(run, where)
    return path


async def run_notebook(session: Any, path: str | Path, params: dict[str, str] | None = None, *, dry_run: bool = False,
                       resume: str | None = None, say: Callable[[str], None] | None = None,
                       progress: Callable[[str], None] | None = None, out: Any = None,
                       keep_echo: bool | None = None) -> NotebookRun:
    """Parse (a syntax error stops here), check the parameters (a bad one stops here), then run."""
    runner = NotebookRunner(session, Path(path), params, dry_run=dry_run, resume=resume, say=say, progress=progress,
                            out=out, keep_echo=keep_echo)
    return await runner.execute()


