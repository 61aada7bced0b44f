"""One OpenSSH channel per host, driven from anyio as subprocesses of the system's `ssh`.

Why the system's ssh and not a library or a port of our own: the operator's
~/.ssh/config, ProxyJump, agent and hardware keys work unchanged, and relay adds
no listening surface anywhere. Why these options:

- `BatchMode=yes`: never a password or passphrase prompt on a channel nobody watches;
- `StrictHostKeyChecking=yes`: an unknown or changed host key is refused, never
  accepted by relay; the error says how the operator adds it with their own ssh;
- relay's own ControlMaster directory (`ControlPath=<RELAY_HOME>/ssh/%C`,
  `ControlPersist`): one authenticated connection per host, shared by every call,
  started explicitly (`ssh -N -f -o ControlMaster=yes`; not -M as well, which would make it ask) so there is exactly one master; sessions use
  it with `ControlMaster=no`, so they never start another;
- `ssh -O check` (bounded in time) before use: a master that is gone is replaced;
  one that hangs (stopped, wedged: the trap that hung other tools forever) is
  killed or its socket removed, then replaced. No step waits without a bound.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from relay_repl.core.controls import visible
from relay_repl.core.errors import ChannelLost, HostError, HostKeyError, ProtocolMismatch, RelayError
from relay_repl.core.host_claims import neutral, shaped
from relay_repl.core.serve_wire import MAX_LINE, PROTOCOL_VERSION, Answer, HelloResult, Request, mismatch

AskFn = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
CHECK_TIMEOUT = 3.0
CONNECT_TIMEOUT = 10
PERSIST = "600"
REMOTE_COMMAND = ("relay", "serve", "--stdio")
MAX_SOCKET = 104
_MASTER_PID = re.compile(r"pid[=](\d+)")  # `Master running (pid=N)`
_early: dict[str, subprocess.Popen[bytes]] = {}  # control socket -> its master's `ssh -N -f`, started early


def start_master_early(name: str, destination: str, control_dir: Path, config: Path | None = None) -> None:
    """Start the host's master now, before the caller's own imports, when the command line already
    names the host (`relay send HOST/kind:name`, issue 33): the connection (key exchange, auth: ~0.17 s,
    most of it in ssh and sshd) runs beside them. The channel for the same socket that opens next adopts
    it (`_start_master`): waited for, refused in the same lines, counted and checked as one it started.
    Nothing is started when a socket is there already (the channel checks that master as before)."""
    ch = SshChannel(name, destination, control_dir, config)
    try:
        path = ch.socket_path()
        if path in _early or os.path.exists(path):
            return
        control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        _early[path] = subprocess.Popen(ch.argv("-N", "-f", master="yes"), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except (OSError, RelayError):
        return  # the channel's own start says why, in its one line


def host_key_problem(stderr: str, name: str, destination: str) -> str | None:
    """The one-line refusal for a host-key failure in ssh's stderr, or None."""
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or "Host key for" in stderr and "has changed" in stderr:
        return (f"host {name} ({destination}): its host key has CHANGED since it was recorded; relay ran nothing "
                f"there. If the change is expected, check the new key out of band, remove the old one with "
                f"`ssh-keygen -R {destination}` and connect once with your own `ssh {destination}`")
    if "Host key verification failed" in stderr or "host key is known" in stderr:
        return (f"host {name} ({destination}): its host key is not known to ssh; relay ran nothing there and never "
                f"accepts a key itself: connect once with your own `ssh {destination}`, check the fingerprint, "
                f"accept it, then retry")
    return None


def _ended(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int | None, str]:
    """(returncode or None when killed at the bound, stderr) of an early `ssh -N -f` (it ends once
    authenticated, its master in the background; its stderr closes with it)."""
    try:
        _out, err = proc.communicate(timeout=timeout)
        return proc.returncode, err.decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, ""


STDERR_LINE = 4096
"""The most of one stderr line from a host shown at once; a longer line is shown in pieces."""


def pass_on_stderr(fd: int, name: str) -> None:
    """Show each line the host's side of a channel writes to stderr (its relay's progress lines,
    ssh's own warnings) on this terminal, made inert by `visible` and under the host's name, until
    the channel's ssh ends. Why: that text comes from another machine; passed through raw, an
    escape sequence in it could draw a forged line on the operator's screen (a plan, a verdict),
    and unmarked it would read as this relay's own words. Reads in bounded pieces: a host that
    floods is shown piece by piece, never held whole."""
    import sys

    with open(fd, "rb", closefd=True) as got:
        while raw := got.readline(STDERR_LINE):
            text = visible(raw.decode(errors="replace").rstrip("\r\n"))
            try:
                print(f"host {name}: {text}", file=sys.stderr, flush=True)
            except (OSError, ValueError):  # our stderr closed (the process ending): keep draining the pipe
                continue


class SshChannel:
    """The channel to one host: its master, and one `relay serve --stdio` session on it."""

    def __init__(self, name: str, destination: str, control_dir: Path, config: Path | None = None,
                 remote_command: Sequence[str] = REMOTE_COMMAND) -> None:
        self.name = name
        self.destination = destination
        self.control_dir = control_dir
        self.config = config
        self.remote_command = tuple(remote_command)
        self._proc: Process | None = None
        self._reader: BufferedByteReceiveStream | None = None
        self._lock = anyio.Lock()
        self._next_id = 0
        self.hello: dict[str, Any] | None = None
        self.master_pid: int | None = None
        self.masters_started = 0
        self.stale_recovered = 0
        # (master pid, fingerprint) as a send's route showed it: the recorded key is read once per master,
        # the one its connection was checked against (session/remote/remote.py send_remote)
        self.host_key: tuple[int | None, str | None] | None = None

    # ---- ssh argv ------------------------------------------------------------------

    def options(self, master: str = "no") -> list[str]:
        opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                "-o", f"ControlPath={self.socket_path()}", "-o", f"ControlMaster={master}",
                "-o", f"ControlPersist={PERSIST}", "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"]
        return (["-F", str(self.config)] if self.config else []) + opts

    def socket_path(self) -> str:
        """`<control_dir>/<id>`: the id a short hash of (config, destination), since ssh binds a
        temporary name 17 bytes longer and a unix socket path holds only 107. When even that is
        too long (a deep RELAY_HOME), the path goes through a short symlink in /tmp to the same
        directory (made and checked here: ours, pointing at the control directory)."""
        ident = hashlib.sha256(f"{self.config}\0{self.destination}".encode()).hexdigest()[:16]
        d = str(self.control_dir)
        if len(d) + 1 + len(ident) + 18 <= MAX_SOCKET:
            return f"{d}/{ident}"
        link = Path(f"/tmp/relay-ssh-{os.getuid()}-{hashlib.sha256(d.encode()).hexdigest()[:10]}")
        self.control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            os.symlink(d, link)
        except FileExistsError:
            pass
        st = os.lstat(link)
        if not (os.path.islink(link) and st.st_uid == os.getuid() and os.readlink(link) == d):
            raise HostError(f"{link} exists and is not relay's link to {d}: remove it, or set RELAY_HOME to a shorter path")
        return f"{link}/{ident}"

    def argv(self, *extra: str, master: str = "no") -> list[str]:
        return ["ssh", *self.options(master), *extra, "--", self.destination]

    async def _run(self, argv: list[str], timeout: float) -> tuple[int | None, str, str]:
        """(returncode or None on timeout, stdout, stderr); the process is killed at the bound."""
        try:
            with anyio.fail_after(timeout):
                res = await anyio.run_process(argv, check=False, stdin=None)
        except TimeoutError:
            return None, "", ""
        except OSError as exc:
            raise HostError(f"cannot run ssh for host {self.name}: {exc}") from None
        return res.returncode, res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace")

    async def control_path(self) -> Path:
        code, out, _ = await self._run(["ssh", *self.options(), "-G", self.destination], CHECK_TIMEOUT)
        for line in out.splitlines():
            if line.startswith("controlpath "):
                return Path(line.split(" ", 1)[1])
        raise HostError(f"host {self.name}: `ssh -G {self.destination}` names no control path (exit {code})")

    # ---- the master ------------------------------------------------------------------

    async def check(self) -> bool:
        """`ssh -O check`, bounded: True iff a master answers. A master that does not answer
        in time is treated as stale: killed if its pid is known, its socket removed."""
        code, out, err = await self._run(self.argv("-O", "check"), CHECK_TIMEOUT)
        if code == 0:
            m = _MASTER_PID.search(out + err)
            self.master_pid = int(m.group(1)) if m else self.master_pid
            return True
        path = await self.control_path()
        if code is None or path.exists():  # hung master, or a socket nobody answers on
            if code is None and self.master_pid:
                try:
                    os.kill(self.master_pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                path.unlink()
                self.stale_recovered += 1
            except OSError:
                pass
        return False

    async def _start_master(self) -> bool:
        """The master there (checked), or a new one started: True then, and not yet checked (`open`
        checks it while its serve session starts). With no socket at relay's own ControlPath there is
        no master to check: one ssh spawn saved on a cold channel. One started early for this socket
        (`start_master_early`) is the new one: waited for here, not started again."""
        early = _early.pop(self.socket_path(), None)
        if early is not None:
            code, err = await anyio.to_thread.run_sync(_ended, early, CONNECT_TIMEOUT + 5.0)
        else:
            if os.path.exists(self.socket_path()) and await self.check():
                return False
            self.control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            code, _out, err = await self._run(self.argv("-N", "-f", master="yes"), CONNECT_TIMEOUT + 5)
        if code != 0:
            key = host_key_problem(err, self.name, self.destination)
            if key:
                raise HostKeyError(key)
            why = (err.strip().splitlines() or ["no answer"])[-1] if code is not None else "timed out"
            raise HostError(f"host {self.name} ({self.destination}) is not reachable: {why}")
        self.masters_started += 1
        return True

    async def _started_master_answers(self) -> None:
        """The check of a master just started (it learns the master's pid, so a hung one can be killed)."""
        if not await self.check():
            raise HostError(f"host {self.name}: the ssh master started but does not answer `ssh -O check`")

    # ---- the serve session -------------------------------------------------------------

    def is_open(self) -> bool:
        """A serve session is running on this channel (its master with it)."""
        return self._proc is not None and self._proc.returncode is None

    async def open(self) -> dict[str, Any]:
        """Master checked (replaced when stale), then `relay serve --stdio` on it; its hello. A master
        started here is checked while the serve session starts (issue 33: one ssh spawn off a cold
        channel's path); when it does not answer, the session is closed and the channel refused."""
        if self.is_open():
            return self.hello or {}
        started = await self._start_master()
        argv = [*self.argv("-T"), *self.remote_command]
        said, into = os.pipe()  # what the host's side writes to stderr: shown here inert, under its name
        try:
            self._proc = await anyio.open_process(argv, stderr=into)
        except OSError as exc:
            os.close(said)
            raise HostError(f"cannot run ssh for host {self.name}: {exc}") from None
        finally:
            os.close(into)
        threading.Thread(target=pass_on_stderr, args=(said, self.name), name=f"relay-ssh-{self.name}-stderr",
                         daemon=True).start()
        assert self._proc.stdout is not None
        self._reader = BufferedByteReceiveStream(self._proc.stdout)
        master_failed: list[RelayError] = []
        failed: list[RelayError] = []

        async def master_answers() -> None:
            try:
                await self._started_master_answers()
            except RelayError as exc:
                master_failed.append(exc)

        got: Any = None
        async with anyio.create_task_group() as tg:
            if started:
                tg.start_soon(master_answers)
            try:
                got = await self._request("hello", {"protocol": PROTOCOL_VERSION}, timeout=CONNECT_TIMEOUT + 20)
            except RelayError as exc:  # raised as itself below, not inside a task group's exception group
                failed.append(exc)
        if master_failed or failed:
            await self.close()
            raise (master_failed or failed)[0]  # the master's refusal first: it is the step before the session
        try:
            hello = shaped(self.name, "hello", HelloResult, got).model_dump()
        except HostError:
            await self.close()
            raise
        self.hello = hello
        return hello

    async def request(self, op: str, args: dict[str, Any] | None = None, timeout: float = 60.0,
                      on_ask: AskFn | None = None) -> Any:
        """One request, its one final answer. An interim `ask` (the serving relay asks the
        operator's gate about a plan) goes to `on_ask`, whose dict is sent back as `approve`
        with the same id; without `on_ask` the answer is a No (digest null)."""
        await self.open()
        return await self._request(op, args or {}, timeout, on_ask)

    async def _request(self, op: str, args: dict[str, Any], timeout: float, on_ask: AskFn | None = None) -> Any:
        async with self._lock:
            proc, reader = self._proc, self._reader
            if proc is None or reader is None or proc.stdin is None:
                raise HostError(f"host {self.name}: no channel (open it first)")
            self._next_id += 1
            rid = self._next_id
            try:
                with anyio.fail_after(timeout):
                    await proc.stdin.send(Request(id=rid, op=op, args=args).model_dump_json().encode() + b"\n")
                    while True:
                        ans = await self._read_answer(reader, op, rid)
                        if ans.ask is None:
                            break
                        reply = await on_ask(ans.ask) if on_ask is not None else {"digest": None}
                        await proc.stdin.send(Request(id=rid, op="approve", args=reply).model_dump_json().encode() + b"\n")
            except TimeoutError:
                await self.close()
                raise HostError(f"host {self.name}: no answer to {op} within {timeout:g}s; the channel is closed") from None
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError,
                    OSError):
                code = await self._reap()
                hint = " (is relay installed there and on PATH?)" if code == 127 else ""
                raise ChannelLost(f"host {self.name}: the channel closed during {op} (ssh exit {code}){hint}") from None
            if not ans.ok:
                if ans.error_kind == "ProtocolMismatch":
                    raise ProtocolMismatch(ans.error or mismatch(-1))
                raise HostError(f"host {self.name}: {ans.error}")
            return ans.result

    async def _read_answer(self, reader: BufferedByteReceiveStream, op: str, rid: int) -> Answer:
        """The next frame from the host, bounded in size, of the protocol's shape, with every string
        in it made inert (`neutral`): a frame that is not is one line naming the host and closes
        the channel (what follows it on the stream cannot be trusted to be a frame either)."""
        try:
            line: bytes | None = await reader.receive_until(b"\n", MAX_LINE)
        except anyio.DelimiterNotFound:
            line = None
        try:
            return self._answer(line, op, rid)
        except HostError:
            await self.close()
            raise

    def _answer(self, line: bytes | None, op: str, rid: int) -> Answer:
        """`line` (None: over MAX_LINE) as the answer to request `rid`, or the HostError saying why it is not."""
        if line is None:
            raise HostError(f"host {self.name} sent a frame over {MAX_LINE // 1048576} MiB during {op}: not read, "
                            f"the channel is closed; check {self.name}")
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            raise HostError(f"host {self.name} sent a line that is not JSON during {op}: not read, the channel is "
                            f"closed; check {self.name}") from None
        if not isinstance(data, dict):
            raise HostError(f"host {self.name} sent a frame that is not a JSON object during {op}: not read, the "
                            f"channel is closed; check {self.name}")
        if data.get("v") != PROTOCOL_VERSION:
            raise ProtocolMismatch(mismatch(visible(str(data.get("v")))[:40], who=f"relay on {self.name}"))
        ans = shaped(self.name, op, Answer, neutral(data))
        if ans.id != rid:
            raise HostError(f"host {self.name} answered request {ans.id} during {op} (request {rid} was asked): "
                            f"not read, the channel is closed; check {self.name}")
        return ans

    async def _reap(self) -> int | None:
        proc, self._proc, self._reader = self._proc, None, None
        if proc is None:
            return None
        with anyio.move_on_after(2):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            with anyio.move_on_after(2):
                await proc.wait()
        with anyio.move_on_after(2):  # its pipes closed now, in this loop: left to the garbage collector, asyncio's
            await proc.aclose()       # transport closes after anyio.run returned ("Event loop is closed", a traceback)
        return proc.returncode

    async def close(self) -> None:
        """End the serve session (the master persists for the next call, ControlPersist)."""
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with anyio.move_on_after(1):
                await proc.stdin.aclose()
        await self._reap()

    async def stop_master(self) -> None:
        await self.close()
        await self._run(self.argv("-O", "exit"), CHECK_TIMEOUT)
