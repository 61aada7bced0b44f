"""`relay`: a ptpython REPL on asyncio with `session` preloaded.

Top-level `await` works (`await session.send(...)`), background tasks keep
running between inputs (`tg.start_soon(...)`: an anyio task group beside the
REPL; one that fails is shown and `tg` is renewed, the prompt stays), and output
from them is printed above the prompt (`patch_stdout=True`). Ctrl-C cancels the
running statement; Ctrl-D asks before leaving.

Start-up is kept close to a bare ptpython (issue 20: at most 1.1x): before the
first prompt only ptpython, asyncio and a few standard-library-light relay modules
are imported. Once the prompt is drawn, anyio is imported and the task group opened
(`anyio` and `tg` join the namespace; an input typed earlier waits for that), then
the session (pydantic models, the ledger, discovery) is built by a background task;
`session` is a thin proxy that waits for that build if used earlier, and whose
repr says it is loading.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

BANNER = """relay_repl {version} — `session` is being prepared (discovery runs in the background). Try:
  session · session.targets · session.inbox      who you are, targets (`await session.refresh()`), replies
  d = await session.send("claude:alpha", "hello", want="reply")   plan, y/N, deliver, confirm; `d` says how it went
  await session.preview("claude:alpha", "hello")   that plan, with nothing sent or asked
  await session.confirm("what", target=…, how=…, payload=…, done_when=…)   your own action behind a plan and y/N
  act = session.gated(fn, target=…, done_when=…)   `await act(...)` runs fn only after its plan's y
  dbg = session.debugger(d) · session.why(d)     a stuck delivery step by step · every event for one id
  run = await session.run("ping", target="claude:alpha")   a saved recipe (`relay recipes` lists them)
Tab completes targets in session.send("…") and members after a dot; Ctrl-C stops a wait; exit() or Ctrl-D leaves.
Every side effect shows its plan and asks [y/N] first: type y then Enter to approve."""

LOADING = "<Session loading: discovery runs in the background; its summary prints here when ready>"


class LazySession:
    """Stands in for the Session until the background build finishes.

    Any use of an attribute blocks until the real session exists, so a fast typist never
    sees a half-built object; after that it is a plain proxy. Only its repr does not wait:
    while loading it says so (the session prints its own summary once discovery has run).
    """

    def __init__(self, build: Callable[[], Any]) -> None:
        object.__setattr__(self, "_build", build)
        object.__setattr__(self, "_real", None)
        object.__setattr__(self, "_lock", threading.Lock())

    def _get(self) -> Any:
        real = object.__getattribute__(self, "_real")
        if real is None:
            with object.__getattribute__(self, "_lock"):
                real = object.__getattribute__(self, "_real")
                if real is None:
                    real = object.__getattribute__(self, "_build")()
                    object.__setattr__(self, "_real", real)
        return real

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and self.built() is None:
            # a printer or completer probing for a protocol (`__pt_repr__`, `__wrapped__`, ...)
            # from its own thread: the Session has none, and building it there would block the input
            raise AttributeError(name)
        return getattr(self._get(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._get(), name, value)

    def __repr__(self) -> str:
        real = self.built()
        if real is None:
            return LOADING
        return repr(real)

    def __dir__(self) -> list[str]:
        return dir(self._get())

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105 - `isinstance(session, Session)` holds while it is being built
        from relay_repl.session.session import Session

        return Session

    def built(self) -> Any:
        """The real session if it is built already, else None (never waits)."""
        return object.__getattribute__(self, "_real")


def record_inputs(repl: Any, inputs: list[Any], ready: Any = None) -> None:
    """Keep each input with whether it ran without error (and its value's repr), so that
    `session.save_notebook("name")` can write what worked as cells (plain dicts: nothing more
    is imported before the prompt). An input typed before `ready` (an asyncio.Event: `anyio`
    and `tg` are in the namespace, a few ms after the first render) waits for it."""
    evaluate = repl.eval_async

    async def recording(line: str) -> Any:
        if ready is not None:
            await ready.wait()
        try:
            value = await evaluate(line)
        except BaseException:
            inputs.append({"text": line, "ok": False})
            raise
        inputs.append({"text": line, "ok": True, "result": None if value is None else repr(value)})
        return value

    repl.eval_async = recording


async def _main(fake: bool) -> None:
    import asyncio

    from ptpython.repl import embed

    from relay_repl import __version__
    from relay_repl.store.paths import history_path

    inputs: list[Any] = []  # every input and whether it ran without error: session.save_notebook reads it

    def build() -> Any:
        from relay_repl.session.app import make_session

        real = make_session(fake=fake)
        real.repl_inputs = inputs
        return real

    session = LazySession(build)
    loop = asyncio.get_running_loop()
    drawn = asyncio.Event()  # set after the prompt's first render (from ptpython's input thread)
    ready = asyncio.Event()  # set once `anyio` and `tg` are in the namespace
    # `anyio` and `tg` are filled in after the first render; their keys are there from the start
    # because ptpython's input thread iterates the namespace (its validator) while this one runs
    namespace: dict[str, Any] = {"session": session, "anyio": None, "tg": None, "__name__": "__main__"}

    def configure(repl: Any) -> None:
        repl.app.after_render += lambda _app: loop.call_soon_threadsafe(drawn.set)
        repl.completer = lazy_completer(session, repl.completer)
        record_inputs(repl, inputs, ready)
        relay_errors_in_one_line(repl)

    print(BANNER.format(version=__version__))
    repl_task = asyncio.create_task(embed(
        configure=configure,
        globals=namespace,
        return_asyncio_coroutine=True,
        patch_stdout=True,
        history_filename=str(history_path()),
        title="relay",
    ))
    # anyio (and everything the session imports) comes after the prompt is on screen: bare
    # ptpython has none of it, and the prompt is what an operator waits for. Bounded, so a
    # REPL that never renders still gets its task group and session.
    waiter = asyncio.create_task(drawn.wait())
    await asyncio.wait({repl_task, waiter}, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if repl_task.done():  # left (or failed) before its first render
        repl_task.result()
        return

    import anyio

    async def prepare(group: Any) -> None:
        real = session._get()
        await real.open_inbox(group, echo=print)
        await real.refresh()
        print(repr(real))

    repl_done = asyncio.Event()
    repl_task.add_done_callback(lambda _t: repl_done.set())

    def opened(tg: Any) -> None:
        namespace.update(anyio=anyio, tg=tg)
        ready.set()

    # Two task groups beside the REPL, never around it: ptpython reads each line in a loop that
    # prints and swallows any exception, so a cancellation redelivered by a task group's scope
    # (a background task failed) printed a traceback forever and the prompt never came back.
    # The operator's `tg` and the session's own work (its build, the inbox, the request sweeper)
    # are apart, so a failing task of the operator's stops no inbox.
    mine = asyncio.create_task(beside(repl_done, opened, said_tg_failed))
    own = asyncio.create_task(beside(repl_done, lambda group: group.start_soon(prepare, group),
                                     said_session_failed))
    try:
        await repl_task
    finally:
        repl_done.set()
        if not repl_task.done():
            repl_task.cancel()
        await asyncio.gather(mine, own, return_exceptions=True)
        removed: list[str] = []
        if session.built() is not None:  # remove the inbox socket and registry entry
            removed = await session.close_inbox()
        print("\n".join(leaving(session.built(), removed)), flush=True)


async def beside(done: Any, fill: Callable[[Any], None], said: Callable[[BaseException], bool]) -> None:
    """Run an anyio task group until `done` (an asyncio.Event: the REPL ended), `fill` starting its
    tasks. A task in it that fails ends only this group: `said(error)` tells the operator and returns
    whether to open a new group (filled again) for what comes next."""
    import anyio

    while True:
        try:
            async with anyio.create_task_group() as group:
                fill(group)
                await done.wait()
                group.cancel_scope.cancel()
            return
        except Exception as exc:  # a task of the group failed: said once, never a loop of tracebacks
            if done.is_set() or not said(exc):
                return


def said_tg_failed(exc: BaseException) -> bool:
    """A task the operator started in `tg` failed: relay's own error as its one line, anything else
    as ptpython shows an input's error (the traceback a bug in one's own code needs), then what
    happens now. `tg` is a new task group, so the next `tg.start_soon` works."""
    import traceback

    from relay_repl.core.controls import visible
    from relay_repl.core.errors import first_relay_error

    err = first_relay_error(exc)
    if err is not None:
        lines = [f"relay: {err}"]
    else:
        inner = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)
        lines = [x.rstrip("\n") for e in inner for x in traceback.format_exception(e)]
    lines.append("relay: a task started in `tg` failed (above); the tasks still running in it were stopped, "
                 "`tg` is a new task group now and the REPL goes on")
    print("\n".join(visible(x) for x in lines), flush=True)
    return True


def said_session_failed(exc: BaseException) -> bool:
    """The session's own background work (its build, the inbox, the request sweeper) failed: one
    sentence and the next step. The REPL goes on (a send still works, its plan and gate too);
    what is lost is the inbox, so replies and agents' requests no longer arrive here."""
    from relay_repl.core.controls import visible
    from relay_repl.core.errors import describe, first_relay_error

    inner = exc.exceptions[0] if isinstance(exc, BaseExceptionGroup) and exc.exceptions else exc
    why = first_relay_error(exc) or describe(inner, "preparing the session or serving its inbox")
    print(visible(f"relay: the session's background work stopped: {why}. Replies and agents' requests no "
                  "longer arrive here; what you type still runs: leave (exit()) and start relay again to "
                  "get them back"), flush=True)
    return False


def leaving(real: Any, removed: list[str]) -> list[str]:
    """What the REPL says as it ends (issue 39: it left the lab running without a word): what it
    removed, what is still open in the ledger, and what it leaves running (the lab)."""
    import os

    from relay_repl.core.controls import visible

    lines = [f"relay: left the REPL; removed {', '.join(removed)}" if removed else "relay: left the REPL"]
    pending = [d for d in (real.deliveries if real is not None else []) if d.outcome == "pending"]
    if pending:
        lines.append(f"  {len(pending)} delivery(ies) still pending, kept in the ledger: `relay debug "
                     f"{pending[-1].relay_id}` looks at one")
    if os.environ.get("RELAY_LAB_DIR"):
        from relay_repl.core.errors import RelayError

        try:
            from relay_repl.lab.lab_status import status

            lab = status()
        except (RelayError, OSError, ValueError):
            lab = None
        alive = [x.name for x in lab.sessions if x.alive] if lab is not None else []
        if lab is not None and alive:
            lines.append(f"  the lab keeps running ({', '.join(alive)}; tmux -L {lab.tmux_socket}): "
                         "`relay lab down` stops it")
    return [visible(x) for x in lines]


def relay_errors_in_one_line(repl: Any) -> None:
    """An error relay raised on purpose prints as its one line (`relay: <what went wrong and
    the next step>`, control bytes made visible), as the CLI prints it; anything else keeps
    ptpython's traceback, which is what a bug or a typo in the operator's own code needs.

    The error is still kept for `pdb.pm()` (sys.last_value), as ptpython keeps it."""
    import sys

    theirs = repl._handle_exception

    def handle(e: BaseException) -> None:
        from ptpython.repl import ReplExit

        if isinstance(e, ReplExit):  # `exit()`: ptpython's async loop prints it as an error and stays
            raise SystemExit(0)  # what `quit()` raises, which that loop ends on
        from relay_repl.core.controls import visible
        from relay_repl.core.errors import first_relay_error

        err = first_relay_error(e)
        if err is None:
            theirs(e)
            return
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, e.__traceback__
        if sys.version_info >= (3, 12):
            sys.last_exc = e
        repl.app.output.write(visible(f"relay: {err}") + "\n\n")
        repl.app.output.flush()

    repl._handle_exception = handle


def lazy_completer(session: LazySession, theirs: Any) -> Any:
    """relay's completer (frontends/completion.py) ahead of ptpython's, imported on the first
    completion rather than before the first prompt."""
    from prompt_toolkit.completion import DynamicCompleter

    made: list[Any] = []

    def get() -> Any:
        if not made:
            from prompt_toolkit.completion import merge_completers

            from relay_repl.frontends.completion import RelayCompleter

            made.append(merge_completers([RelayCompleter(session.built), theirs]))
        return made[0]

    return DynamicCompleter(get)


def run(*, fake: bool = False) -> int:
    import asyncio
    import os

    from relay_repl.store.ledger_file import check_ledger_file
    from relay_repl.store.paths import ledger_path

    path = ledger_path()
    if os.path.lexists(path):
        check_ledger_file(path)  # a bad ledger is one line before the prompt, not an error inside the REPL

    asyncio.run(_main(fake))
    return 0
