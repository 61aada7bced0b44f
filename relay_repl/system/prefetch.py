"""Start each registered kind's session listing before the heavy imports, so they overlap.

`relay targets` is a cold start: about 0.14 s of Python imports, then the listings, each
possibly a process of its own (Claude's `claude agents --json` is a node process, ~0.16 s).
Started first, the two run side by side. Which listing to run is the kind's fact: a kind
declares a standard-library-only module in the entry-point group `relay_repl.prefetch`, with
`prefetch(env) -> (key, argv, env) | None`. This module is standard library only (it is
imported before pydantic and friends) and loads each declared module BY FILE, not by import:
importing `relay_repl.agents.<kind>.listing` would first run the agents package (pydantic and
every agent module, ~0.2 s), so the listing would start only after the imports it was meant to
overlap; `relay notebook run` then waited for it before its first cell.
"""

from __future__ import annotations

import os
import sys

from relay_repl.system.entry_points import scan_entry_points

GROUP = "relay_repl.prefetch"

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    from types import ModuleType

_pending: dict[tuple[str, tuple[str, ...]], Listing] = {}


def wanted(words: list[str]) -> bool:
    """Whether this command line lists targets first: `relay targets`, `relay notebook run`
    (its first cell needs the targets too) and `relay serve --stdio` (the channel is opened for a
    first `targets` or `send`, both of which discover); never for `--help`."""
    nb_run = "notebook" in words[:3] and "run" in words[:4]
    serve = "serve" in words[:3] and "--stdio" in words  # a host's relay: the caller's first request lists or sends
    return ("targets" in words[:3] or nb_run or serve) and "--help" not in words and "-h" not in words


def load_by_file(name: str, module: str, group: str = GROUP) -> ModuleType | None:
    """`module` executed from its file under a private name (of `group` and `name`), without its
    parent packages' __init__ (also how session/core/whoami.py loads the kinds' own-address rules).

    Through `importlib.machinery`, not `importlib.util` (which imports contextlib, functools and
    collections first): this runs before the spawn. The top package is usually imported already
    (`relay_repl`, running this), so its folder is read from it rather than searched for."""
    top, *rest = module.split(".")
    if not rest:
        return None
    pkg = sys.modules.get(top)
    locations = list(getattr(pkg, "__path__", None) or ())
    if not locations:
        import importlib.util

        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        locations = list(spec.submodule_search_locations)
    path = os.path.join(locations[0], *rest[:-1], rest[-1] + ".py")
    if not os.path.isfile(path):
        return None
    private = f"_{group.replace('.', '_')}_{name.replace('-', '_')}"
    if private in sys.modules:
        return sys.modules[private]
    from importlib.machinery import ModuleSpec, SourceFileLoader

    loader = SourceFileLoader(private, path)
    spec = ModuleSpec(private, loader, origin=path)
    spec.has_location = True
    mod = type(sys)(private)
    mod.__spec__, mod.__loader__, mod.__file__ = spec, loader, path
    sys.modules[private] = mod
    try:
        loader.exec_module(mod)
    except Exception:  # a broken third-party listing must not stop the command: discovery runs it later
        del sys.modules[private]
        return None
    return mod


SIBLINGS = "relay_repl.by_file"
"""The group under which `sibling` loads a module by file: one private copy per module, whoever asks."""


def sibling(me: str, module: str) -> ModuleType:
    """`module` taken the way the module named `me` was: by name when `me` was imported by name, by
    file (`load_by_file`, one private copy) when `me` was itself loaded by file (its private name).

    Why: a module that both paths run (a screen classifier: the models' path imports it by name, the
    standard-library path of `relay targets` loads it by file) cannot import its siblings by name,
    which would first run the agents package (pydantic, ~0.08 s) on the plain path."""
    if not me.startswith("_"):
        import importlib

        return importlib.import_module(module)
    mod = load_by_file(module.removeprefix("relay_repl.").replace(".", "-"), module, SIBLINGS)
    if mod is None:
        raise ImportError(f"{module} (by file)")
    return mod


def start(env: dict[str, str] | None = None) -> None:
    """Launch every declared listing now; `take()` hands its process to the kind's provider later."""
    environ = dict(os.environ if env is None else env)
    for ep in scan_entry_points(GROUP):
        mod = load_by_file(ep.name, ep.value.partition(":")[0].strip())
        try:
            planned = mod.prefetch(environ) if mod is not None else None
        except Exception:
            planned = None
        if planned is None:
            continue
        key, argv, run_env = planned
        slot = (ep.name, tuple(key))
        if slot in _pending:
            continue
        try:
            _pending[slot] = Listing(list(argv), run_env)
        except OSError:
            pass


def take(name: str, key: tuple[str, ...]) -> Listing | None:
    """The prefetched listing of entry `name` (the kind) started for `key`, if one is pending."""
    return _pending.pop((name, tuple(key)), None)


def version_env(environ: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """What `<client> --version` runs with: `environ`, the auto-updater off unless it says otherwise, and
    the kind's own `extra` (its `version_env`: agents/capabilities.py)."""
    env = dict(environ)
    env.setdefault("DISABLE_AUTOUPDATER", "1")
    env.update(extra)
    return env


_versions: dict[tuple[str, str, int], tuple[dict[str, str], Listing]] = {}


def _version_key(exe: str) -> tuple[str, str, int] | None:
    try:
        return exe, os.path.realpath(exe), os.stat(exe).st_mtime_ns
    except OSError:
        return None


def start_version(exe: str, env: dict[str, str]) -> None:
    """Start `exe --version` now, under `env`, for agents/versions.binary_version to take later.

    Why: a Claude run's first plan lists the operator's inbox as a Claude peer, for the verified client
    only, and asking the client's version (a process of its own, ~10-30 ms) came after ~0.15 s of
    imports, in series; started from the run's plain phase 1 (frontends/run_plain.py, through the kind's
    `reply_route_soon`), it runs while they do. It decides nothing: `take_version` hands it over only for
    the very file (path, real path, mtime) and environment binary_version would run, else it runs its own."""
    key = _version_key(exe)
    if key is None or key in _versions:
        return
    try:
        _versions[key] = (dict(env), Listing([exe, "--version"], dict(env)))
    except OSError:
        pass


def _pending_version(exe: str, env: dict[str, str]) -> tuple[tuple[str, str, int], Listing] | None:
    """(its key, the process) of the `exe --version` started early for this same file and environment, or None
    (one that does not match is left alone: its answer is not this question's)."""
    key = _version_key(exe)
    got = _versions.get(key) if key is not None else None
    return (key, got[1]) if key is not None and got is not None and got[0] == env else None


def take_version(exe: str, env: dict[str, str]) -> Listing | None:
    """The `exe --version` started early for this same file and environment, if one is pending, handed over
    (no longer pending)."""
    found = _pending_version(exe, env)
    if found is None:
        return None
    del _versions[found[0]]
    return found[1]


def peek_version(exe: str, env: dict[str, str]) -> Listing | None:
    """The `exe --version` started early for this same file and environment, left pending: a Claude run's
    plain phase 1 reads its answer (the listing's plan needs the version), and binary_version then takes
    the same process, whose `result` gives the same answer again (one process, one answer)."""
    found = _pending_version(exe, env)
    return found[1] if found is not None else None


class Listing:
    """A listing process started early, `os.posix_spawn`ed; its provider reads `result(timeout)`.

    Why not `subprocess.Popen`: importing `subprocess` (selectors, threading, signal, locale)
    came before the spawn, ~7 ms of the cold start at load 2 and more on a busier machine, every
    one added to `relay targets`' ratio to the very listing it spawns (`-X importtime`). The child
    is set up as Popen would: stdin /dev/null, stdout and stderr pipes, SIGPIPE and SIGXFSZ back
    to their defaults (Python ignores them), and no descriptor of ours left open in it."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        import _signal  # type: ignore[import-not-found]  # signal's C half: `signal` imports enum

        self.args = argv
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        actions: list[tuple] = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
        # close_fds as Popen has it: an inheritable descriptor this process was given (a lock, a
        # caller's pipe) must not stay open for the listing's lifetime
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds() if fd > 2]
        try:
            self.pid = os.posix_spawn(argv[0], argv, env, file_actions=actions,
                                      setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        self._out, self._err = out_r, err_r
        self._done: tuple[int, bytes, bytes] | TimeoutError | None = None

    def result(self, timeout: float | None = None) -> tuple[int, bytes, bytes]:
        """(exit code, stdout, stderr) once the process has exited, as `subprocess.run` gives
        them; TimeoutError (the process killed) after `timeout` seconds. Asked again, the same answer
        (or the same TimeoutError): the process ran once."""
        if self._done is None:
            try:
                self._done = self._wait(timeout)
            except TimeoutError as exc:
                self._done = exc
        if isinstance(self._done, TimeoutError):
            raise self._done
        return self._done

    def _wait(self, timeout: float | None) -> tuple[int, bytes, bytes]:
        import select
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        chunks: dict[int, list[bytes]] = {self._out: [], self._err: []}
        poller = select.poll()
        waiting = set(chunks)
        for fd in chunks:
            poller.register(fd, select.POLLIN)
        try:
            exited = os.pidfd_open(self.pid)  # readable once the process has exited: its end is waited for too
        except (AttributeError, OSError):
            exited = -1
        else:
            poller.register(exited, select.POLLIN)
            waiting.add(exited)
        try:
            while waiting:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    self._kill()
                    raise TimeoutError(f"{self.args[0]} did not finish within {timeout:g}s")
                for fd, _ in poller.poll(None if left is None else max(1, int(left * 1000))):
                    data = os.read(fd, 65536) if fd in chunks else b""
                    if data:
                        chunks[fd].append(data)
                    else:
                        poller.unregister(fd)
                        waiting.discard(fd)
        finally:
            for fd in (*chunks, exited):
                if fd >= 0:
                    os.close(fd)
        return self._reap(), b"".join(chunks[self._out]), b"".join(chunks[self._err])

    def _reap(self) -> int:
        try:
            return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        except ChildProcessError:
            return 0  # reaped elsewhere: what Popen reports then

    def _kill(self) -> None:
        import _signal

        try:
            os.kill(self.pid, _signal.SIGKILL)
        except OSError:
            pass
        self._reap()


def _inheritable_fds() -> list[int]:
    """This process's descriptors a child would inherit (Python opens its own non-inheritable)."""
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return []
    out = []
    for fd in fds:
        try:
            if os.get_inheritable(fd):
                out.append(fd)
        except OSError:
            pass  # the listdir's own descriptor, closed by now
    return out
