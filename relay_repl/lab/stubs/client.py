"""Control client for the stub server: async (`StubClient`) and sync (`SyncStubClient`).

The control API lives on a UNIX socket, so this uses aiohttp's UnixConnector. Every
failure (socket missing, server refused, bad script) becomes `LabError` with one line.

Also a tiny CLI for poking a running stub by hand:
`python -m relay_repl.lab.stubs.client SOCK add alpha anthropic`, `... SOCK list`,
`... SOCK requests alpha`, `... SOCK rule alpha '{"steps":[{"text":"hi"}]}'`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from relay_repl.agents.kind import LabDriver
from relay_repl.core.errors import LabError

from relay_repl.lab.stubs.converse import lab_kind
from relay_repl.lab.stubs.script import Rule, Script, Step, ToolCall
from relay_repl.lab.stubs.server import RecordedRequest, SessionInfo

T = TypeVar("T")


def send_message_rule(to: str, message: str, *, summary: str = "stub message", then_text: str = "sent",
                      match: str | None = None, once: bool = True, api: str | None = None) -> Rule:
    """The rule that makes a lab session message a peer natively: its kind's message call (its lab
    driver's `message_call`), loaded first when its client defers the tool (`load_call` with nothing
    offered: Claude Code's SendMessage is deferred, loaded by ToolSearch), then text. The kind is the
    one whose sessions talk stub `api`, else the first lab kind with a message tool."""
    driver = messaging_driver(api)
    call = driver.message_call(to, message, summary)
    if call is None:
        raise LabError(f"the lab agents of stub API {api!r} have no message tool")
    load = driver.load_call(call.name, ())
    steps = [*([] if load is None else [Step(tool=ToolCall(name=load.name, input=dict(load.input)))]),
             Step(tool=ToolCall(name=call.name, input=dict(call.input))), Step(text=then_text)]
    return Rule(match=match, once=once, steps=steps)


def messaging_driver(api: str | None = None) -> LabDriver:
    """The lab driver of the kind whose sessions talk stub `api`, else of the first registered lab kind
    whose agents message a listed peer natively; LabError when there is none."""
    from relay_repl.agents import registry

    if api is not None:
        found = lab_kind(api)
        if found is None:
            raise LabError(f"no lab kind talks stub API {api!r}")
        return found[1]
    for k in registry.kinds():
        d = k.lab_driver()
        if d is not None and k.replies.answers_listed_inbox:
            return d
    raise LabError("no lab kind messages its peers natively")


class StubClient:
    """Async client; use as `async with StubClient(sock) as c: ...` or call `close()`."""

    def __init__(self, control: str | Path, timeout: float = 30.0) -> None:
        self.control = str(control)
        self.timeout = timeout
        self._http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> StubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def _call(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None,
                    timeout: float | None = None) -> Any:
        if self._http is None:
            self._http = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.control))
        try:
            async with self._http.request(
                method, f"http://stub{path}", json=body, params=params,
                timeout=aiohttp.ClientTimeout(total=timeout or self.timeout),
            ) as resp:
                text = await resp.text()
                data: Any = json.loads(text) if text else None
                if resp.status >= 400:
                    msg = data.get("error") if isinstance(data, dict) else None
                    raise LabError(f"stub {method} {path}: {msg or f'HTTP {resp.status}'}")
                return data
        except (aiohttp.ClientConnectionError, FileNotFoundError, ConnectionRefusedError) as exc:
            raise LabError(f"stub control socket {self.control} not reachable ({exc}); is the stub server running?") from exc
        except TimeoutError as exc:
            raise LabError(f"stub {method} {path}: no answer within {timeout or self.timeout:g}s") from exc
        except ValueError as exc:
            raise LabError(f"stub {method} {path}: answer is not JSON") from exc

    async def health(self) -> dict[str, Any]:
        return await self._call("GET", "/health")

    async def add_session(self, name: str, api: str) -> SessionInfo:
        return SessionInfo.model_validate(await self._call("POST", "/sessions", {"name": name, "api": api}))

    async def list_sessions(self) -> list[SessionInfo]:
        return [SessionInfo.model_validate(s) for s in await self._call("GET", "/sessions")]

    async def remove_session(self, name: str) -> None:
        await self._call("DELETE", f"/sessions/{name}")

    async def get_script(self, name: str) -> dict[str, Any]:
        return await self._call("GET", f"/sessions/{name}/script")

    async def set_script(self, name: str, script: Script | list[Rule] | dict[str, Any]) -> dict[str, Any]:
        if isinstance(script, list):
            script = Script(rules=script)
        body = script.model_dump(exclude_none=True) if isinstance(script, Script) else script
        return await self._call("PUT", f"/sessions/{name}/script", body)

    async def add_rule(self, name: str, rule: Rule | dict[str, Any]) -> Rule:
        body = rule.model_dump(exclude_none=True) if isinstance(rule, Rule) else rule
        return Rule.model_validate(await self._call("POST", f"/sessions/{name}/rules", body))

    async def requests(self, name: str, *, kind: str | None = None, min_count: int = 0, timeout: float = 0,
                       body: bool = True) -> list[RecordedRequest]:
        """Recorded requests; with `min_count`, wait up to `timeout` s for that many."""
        params = {"min": str(min_count), "timeout": str(timeout), "body": "1" if body else "0"}
        if kind:
            params["kind"] = kind
        data = await self._call("GET", f"/sessions/{name}/requests", params=params, timeout=timeout + self.timeout)
        return [RecordedRequest.model_validate(r) for r in data]

    async def clear_requests(self, name: str) -> int:
        return int((await self._call("DELETE", f"/sessions/{name}/requests"))["cleared"])

    async def set_default(self, name: str, text: str | None) -> None:
        await self._call("POST", f"/sessions/{name}/default", {"text": text})

    async def release(self, name: str) -> None:
        """End every hold of `name` in progress now: its turn's reply follows at once."""
        await self._call("POST", f"/sessions/{name}/release")

    async def hold(self, name: str, seconds: float, *, text: str | None = None, match: str | None = None) -> Rule:
        """The next matching user turn stays busy for `seconds` (a once-rule)."""
        return await self.add_rule(name, Rule(match=match, once=True, steps=[Step(text=text, hold=seconds)]))

    async def tool_call(self, name: str, tool: str, input: dict[str, Any], *, then_text: str = "done",
                        match: str | None = None, once: bool = True, hold: float | None = None) -> Rule:
        """The next matching user turn calls `tool(input)`, then answers `then_text`."""
        steps = [Step(tool=ToolCall(name=tool, input=input), hold=hold), Step(text=then_text)]
        return await self.add_rule(name, Rule(match=match, once=once, steps=steps))

    async def send_message(self, name: str, to: str, message: str, *, then_text: str = "sent",
                           match: str | None = None) -> Rule:
        """The next matching turn sends `message` to peer `to` natively (`send_message_rule`: a kind
        with a message tool, e.g. Claude Code's SendMessage)."""
        return await self.add_rule(name, send_message_rule(to, message, then_text=then_text, match=match))


class SyncStubClient:
    """Blocking wrappers over `StubClient`, one short-lived event loop per call.

    Safe to call from inside a running loop too (the call then runs in a worker thread),
    so a sync test helper can be used from an async test.
    """

    def __init__(self, control: str | Path, timeout: float = 30.0) -> None:
        self.control = str(control)
        self.timeout = timeout

    def _run(self, fn: Callable[[StubClient], Awaitable[T]]) -> T:
        async def go() -> T:
            async with StubClient(self.control, self.timeout) as c:
                return await fn(c)

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(go())
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, go()).result()

    def health(self) -> dict[str, Any]:
        return self._run(lambda c: c.health())

    def add_session(self, name: str, api: str) -> SessionInfo:
        return self._run(lambda c: c.add_session(name, api))

    def list_sessions(self) -> list[SessionInfo]:
        return self._run(lambda c: c.list_sessions())

    def remove_session(self, name: str) -> None:
        return self._run(lambda c: c.remove_session(name))

    def get_script(self, name: str) -> dict[str, Any]:
        return self._run(lambda c: c.get_script(name))

    def set_script(self, name: str, script: Script | list[Rule] | dict[str, Any]) -> dict[str, Any]:
        return self._run(lambda c: c.set_script(name, script))

    def add_rule(self, name: str, rule: Rule | dict[str, Any]) -> Rule:
        return self._run(lambda c: c.add_rule(name, rule))

    def requests(self, name: str, *, kind: str | None = None, min_count: int = 0, timeout: float = 0,
                 body: bool = True) -> list[RecordedRequest]:
        return self._run(lambda c: c.requests(name, kind=kind, min_count=min_count, timeout=timeout, body=body))

    def clear_requests(self, name: str) -> int:
        return self._run(lambda c: c.clear_requests(name))

    def set_default(self, name: str, text: str | None) -> None:
        return self._run(lambda c: c.set_default(name, text))

    def release(self, name: str) -> None:
        return self._run(lambda c: c.release(name))

    def hold(self, name: str, seconds: float, *, text: str | None = None, match: str | None = None) -> Rule:
        return self._run(lambda c: c.hold(name, seconds, text=text, match=match))

    def tool_call(self, name: str, tool: str, input: dict[str, Any], *, then_text: str = "done",
                  match: str | None = None, once: bool = True, hold: float | None = None) -> Rule:
        return self._run(lambda c: c.tool_call(name, tool, input, then_text=then_text, match=match, once=once, hold=hold))

    def send_message(self, name: str, to: str, message: str, *, then_text: str = "sent",
                     match: str | None = None) -> Rule:
        return self._run(lambda c: c.send_message(name, to, message, then_text=then_text, match=match))


def main(argv: list[str] | None = None) -> int:
    """Hand-poking CLI; prints JSON. Not part of the product surface."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print("usage: python -m relay_repl.lab.stubs.client SOCK (list|add NAME API|rm NAME|script NAME JSON|"
              "rule NAME JSON|default NAME TEXT|requests NAME [kind]|clear NAME|hold NAME SECS)", file=sys.stderr)
        return 2
    c = SyncStubClient(args[0])
    cmd, rest = args[1], args[2:]
    try:
        out: Any
        if cmd == "list":
            out = [s.model_dump() for s in c.list_sessions()]
        elif cmd == "add":
            out = c.add_session(rest[0], rest[1]).model_dump()
        elif cmd == "rm":
            c.remove_session(rest[0])
            out = None
        elif cmd == "script":
            out = c.set_script(rest[0], json.loads(rest[1]))
        elif cmd == "rule":
            out = c.add_rule(rest[0], json.loads(rest[1])).model_dump()
        elif cmd == "default":
            c.set_default(rest[0], rest[1])
            out = None
        elif cmd == "requests":
            out = [r.model_dump(exclude={"body"}) for r in c.requests(rest[0], kind=rest[1] if len(rest) > 1 else None)]
        elif cmd == "clear":
            out = c.clear_requests(rest[0])
        elif cmd == "hold":
            out = c.hold(rest[0], float(rest[1])).model_dump()
        else:
            print(f"unknown command {cmd!r}", file=sys.stderr)
            return 2
    except LabError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
