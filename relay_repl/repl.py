"""`relay`: a ptpython REPL on asyncio with `session` preloaded.

Top-level `await` works (`await session.send(...)`), background tasks keep
running between inputs (the REPL runs inside an anyio task group), and output
from them is printed above the prompt (`patch_stdout=True`). Ctrl-C cancels the
running statement; Ctrl-D asks before leaving.
"""

from __future__ import annotations

from typing import Any

BANNER = """relay_repl {version} — `session` is ready. Try:
  session                      targets, your address, open deliveries
  await session.refresh()      re-discover targets
  await session.send("{example}", "hello", want="ack")
  session.why("<relay id>")     every event recorded for one id
Every side effect shows its plan and asks [y/N] first."""


async def _main(fake: bool) -> None:
    import anyio
    from ptpython.repl import embed

    from . import __version__
    from .app import make_session
    from .envelope import Envelope
    from .paths import history_path

    session = make_session(fake=fake)
    await session.refresh()
    example = session.targets[0].spec if session.targets else "claude:alpha"
    print(BANNER.format(version=__version__, example=example))
    print(repr(session))
    async with anyio.create_task_group() as tg:
        namespace: dict[str, Any] = {
            "session": session,
            "Envelope": Envelope,
            "anyio": anyio,
            "tg": tg,
            "__name__": "__main__",
        }
        try:
            await embed(
                globals=namespace,
                return_asyncio_coroutine=True,
                patch_stdout=True,
                history_filename=str(history_path()),
                title="relay",
            )
        finally:
            tg.cancel_scope.cancel()


def run(*, fake: bool = False) -> int:
    import anyio

    anyio.run(_main, fake, backend="asyncio")
    return 0
