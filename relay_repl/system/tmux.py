"""The one tmux runner: every tmux command relay and its lab run goes through here.

Why one: discovery (listing and capturing panes), the tmux transport (reading and typing
into a rostered pane) and the lab (starting sessions on its private server, staging
states for tests) all drive the same program, and each once had its own runner with its
own idea of the environment, the timeout and what a failure means. Here:

- the environment: `$TMUX` is dropped (an explicit server is always named) and a UTF-8
  locale is ensured, else tmux prints every non-ASCII character (`›`, `❯`) as `_`;
- the server: `("-S", path)` or `("-L", name)`, plus `-f /dev/null` when a config
  must not be read (the lab's server starts from nothing of the operator's);
- the result: `TmuxResult` with stdout/stderr as lists of lines (trailing blank lines
  dropped, libtmux's convention); a command that cannot run raises `TmuxError`.

`run` blocks (the transport and the lab call it from a worker thread); `arun` is the
same for async callers (discovery).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from relay_repl.core.errors import TmuxError

TMUX_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class TmuxResult:
    """What one tmux invocation said."""

    returncode: int
    stdout: list[str]
    stderr: list[str]

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def text(self) -> str:
        return "\n".join(self.stdout)

    @property
    def error(self) -> str:
        """The first line of stderr (or stdout), fit for a one-line message."""
        return (" ".join(self.stderr) or " ".join(self.stdout) or f"exit {self.returncode}").strip()[:200]


def tmux_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a tmux client: `env` without $TMUX, with a UTF-8 locale."""
    child = {k: v for k, v in (os.environ if env is None else env).items() if k != "TMUX"}
    if not any("UTF-8" in child.get(k, "").upper() for k in ("LC_ALL", "LC_CTYPE", "LANG")):
        child["LC_CTYPE"] = "C.UTF-8"
    return child


def tmux_binary(env: Mapping[str, str] | None = None) -> str | None:
    """`tmux` on the PATH of `env` (default: ours), or None."""
    return shutil.which("tmux", path=(os.environ if env is None else env).get("PATH"))


def argv(server: Sequence[str], args: Sequence[str], *, tmux: str = "tmux", config: str | None = None,
         prefix: Sequence[str] = ()) -> list[str]:
    """The command line for `args` against `server` (`("-S", path)` or `("-L", name)`). Pure."""
    return [*prefix, tmux, *server, *(["-f", config] if config else []), *args]


def _lines(raw: bytes | str) -> list[str]:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    out = text.split("\n")
    while out and out[-1] == "":
        out.pop()
    return out


def _prepare(server: Sequence[str], args: Sequence[str], env: Mapping[str, str] | None, config: str | None,
             prefix: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    child = tmux_env(env)
    tmux = tmux_binary(child)
    if tmux is None:
        raise TmuxError("tmux is not installed (or not on PATH): install it, e.g. apt-get install tmux")
    return argv(server, args, tmux=tmux, config=config, prefix=prefix), child


def run(server: Sequence[str], *args: str, env: Mapping[str, str] | None = None, timeout: float = TMUX_TIMEOUT,
        config: str | None = None, prefix: Sequence[str] = ()) -> TmuxResult:
    """Run one tmux command (blocking). Raises TmuxError when tmux cannot run or times out;
    a non-zero exit is returned, not raised (callers know what it means to them)."""
    cmd, child = _prepare(server, args, env, config, prefix)
    try:
        cp = subprocess.run(cmd, env=child, capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TmuxError(f"tmux {args[0] if args else ''} did not answer within {timeout:g}s") from None
    except OSError as exc:
        raise TmuxError(f"cannot run tmux: {exc.strerror or exc}") from None
    return TmuxResult(cp.returncode, _lines(cp.stdout), [ln for ln in _lines(cp.stderr) if ln])


async def arun(server: Sequence[str], *args: str, env: Mapping[str, str] | None = None,
               timeout: float = TMUX_TIMEOUT, config: str | None = None) -> TmuxResult:
    """`run` for async callers (the child runs without blocking the event loop); `run` itself
    inside a loopless listing (system/loopless.py), which has no event loop to keep free."""
    from relay_repl.system import loopless

    if loopless.active():
        return run(server, *args, env=env, timeout=timeout, config=config)
    import anyio  # here, not at the top: a loopless listing never imports it

    cmd, child = _prepare(server, args, env, config, ())
    try:
        with anyio.fail_after(timeout):
            cp = await anyio.run_process(cmd, check=False, env=child, stdin=subprocess.DEVNULL)
    except TimeoutError:
        raise TmuxError(f"tmux {args[0] if args else ''} did not answer within {timeout:g}s") from None
    except OSError as exc:
        raise TmuxError(f"cannot run tmux: {exc.strerror or exc}") from None
    return TmuxResult(cp.returncode, _lines(cp.stdout), [ln for ln in _lines(cp.stderr) if ln])
