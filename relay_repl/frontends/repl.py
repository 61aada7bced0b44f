"""`relay`: a ptpython REPL on asyncio with `session` preloaded.

Top-level `await` works (`await session.send(...)`), background tasks keep
running between inputs (the REPL runs inside an anyio task group), and output
from them is printed above the prompt (`patch_stdout=True`). Ctrl-C cancels the
running statement; Ctrl-D asks before leaving.

Start-up is kept close to a bare ptpython: the session (pydantic models, the
ledger, discovery) is built by a background task once the prompt is up, and
`session` is a thin proxy that waits for that build if touched earlier.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

BANNER = """relay_repl {version} — `session` is being prepared (discovery runs in the background). Try:
  session                      targets, your address, open deliveries
  await session.refresh()      re-discover targets
  await session.send("claude:alpha", "hello", want="ack")
  dbg = session.debugger(d)    a stuck delivery: print dbg, await dbg.look() / dbg.step() / dbg.resume()
  session.why("<relay id>")    every event recorded for one id, as a table
  run = await session.run("ping", target="claude:alpha")   a saved recipe (`relay recipes` lists them)
  session.transports           the transports and their capabilities; `a | b` chains them
Tab completes targets inside session.send("…"); Ctrl-C stops a wait (the delivery stays, debuggable).
Every side effect shows its plan and asks [y/N] first: type y then Enter to approve."""


class LazySession:
    """Stands in for the Session until the background build finishes.

    Any use (attribute, repr) blocks until the real session exists, so a fast
    typist never sees a half-built object; after that it is a plain proxy.
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
        return getattr(self._get(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._get(), name, value)

    def __repr__(self) -> str:
        return repr(self._get())

    def __dir__(self) -> list[str]:
        return dir(self._get())

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105 - `isinstance(session, Session)` holds while it is being built
        from relay_repl.session.session import Session

        return Session

    def built(self) -> Any:
        """The real session if it is built already, else None (never waits)."""
        return object.__getattribute__(self, "_real")


def record_inputs(repl: Any, inputs: list[Any]) -> None:
    """Keep each input with whether it ran without error (and its value's repr), so that
    `session.save_notebook("name")` can write what worked as cells (plain dicts: nothing more
    is imported before the prompt)."""
    evaluate = repl.eval_async

    async def recording(line: str) -> Any:
        try:
            value = await evaluate(line)
        except BaseException:
            inputs.append({"text": line, "ok": False})
            raise
        inputs.append({"text": line, "ok": True, "result": None if value is None else repr(value)})
        return value

    repl.eval_async = recording


async def _main(fake: bool) -> None:
    import anyio
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

    drawn = anyio.Event()  # set after the prompt's first render

    async def prepare() -> None:
        # Building the session imports most of relay_repl and blocks the loop for a while:
        # start it once the prompt is on screen (not after a guessed delay, which on a fast
        # machine could land before the first render and hold the prompt back); bounded, so
        # a REPL that never renders still gets its session.
        with anyio.move_on_after(1.0):
            await drawn.wait()
        real = session._get()
        await real.open_inbox(tg, echo=print)
        await real.refresh()
        print(repr(real))

    print(BANNER.format(version=__version__))
    async with anyio.create_task_group() as tg:
        tg.start_soon(prepare)
        namespace: dict[str, Any] = {"session": session, "anyio": anyio, "tg": tg, "__name__": "__main__"}
        def configure(repl: Any) -> None:
            from prompt_toolkit.completion import merge_completers

            from relay_repl.frontends.completion import RelayCompleter

            repl.app.after_render += lambda _app: drawn.set()
            ours = RelayCompleter(lambda: object.__getattribute__(session, "_real"))
            repl.completer = merge_completers([ours, repl.completer])
            record_inputs(repl, inputs)

        try:
            await embed(
                configure=configure,
                globals=namespace,
                return_asyncio_coroutine=True,
                patch_stdout=True,
                history_filename=str(history_path()),
                title="relay",
            )
        finally:
            if object.__getattribute__(session, "_real") is not None:  # remove the inbox socket and registry entry
                await session.close_inbox()
            tg.cancel_scope.cancel()


def run(*, fake: bool = False) -> int:
    import os

    import anyio

    from relay_repl.store.ledger_file import check_ledger_file
    from relay_repl.store.paths import ledger_path

    path = ledger_path()
    if os.path.lexists(path):
        check_ledger_file(path)  # a bad ledger is one line before the prompt, not an error inside the REPL

    anyio.run(_main, fake, backend="asyncio")
    return 0
