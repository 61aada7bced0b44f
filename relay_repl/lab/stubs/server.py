"""The stub model server: a control API on a UNIX socket, one loopback TCP port per session.

Why this shape:
- The control API is on a filesystem socket because the lab may run the clients inside a
  private network namespace the operator's TCP cannot reach; a socket file still can be.
- Each session gets its own port, so a request is attributed to a session by the port it
  arrived on, never by guessing from headers.
- A stub bug shows up as a hung client, so every request is logged to stderr in one line
  and recorded (queryable over the control API) with the rule that answered it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
import time
from collections.abc import Callable
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from relay_repl.core.envelope import Envelope
from relay_repl.lab.stubs import apis
from relay_repl.lab.stubs.converse import Converser
from relay_repl.lab.stubs.script import LastInput, Reply, Rule, Script, ScriptState

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HIDDEN_HEADERS = {"authorization", "x-api-key", "cookie", "proxy-authorization"}
HOST = "127.0.0.1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionSpec(_Model):
    """Body of `POST /sessions`."""

    name: str
    api: str = Field(description="the stub API its client talks: a module of this package (stubs/apis.py)")

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("name must be 1-64 of [A-Za-z0-9_.-], starting alphanumeric")
        return v

    @field_validator("api")
    @classmethod
    def _api_ok(cls, v: str) -> str:
        return apis.check(v)


class SessionInfo(_Model):
    """A session's address, as the launcher needs it to point a client at the stub."""

    name: str
    api: str
    port: int
    base_url: str


class DefaultText(_Model):
    """Body of `POST /sessions/{name}/default`; null restores `ack: <text>`."""

    text: str | None


class RecordedRequest(_Model):
    """One request a client made to a session's port, and what the stub did with it."""

    seq: int
    session: str
    time: float
    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    kind: Literal["main", "side"]
    side_reason: str | None = None
    last_text: str = ""
    tool_result: bool = False
    answered_by: str
    reply_text: str = ""
    reply_tool: str | None = None
    hold: float = 0.0
    outcome: Literal["streaming", "ok", "aborted"] = "streaming"
    finished: float | None = None


class Ready(_Model):
    """The ready file: written atomically once the control socket listens."""

    pid: int
    control: str


def listed_peer_name(env: Envelope) -> str | None:
    """The name under which `env`'s sender is listed as a peer in a lab client's own registry, as
    that client's peer listing shows it (asked of each kind that answers only a listed peer), or
    None when no registry lists it."""
    from relay_repl.agents import registry

    for k in registry.kinds():
        if k.replies.answers_listed_inbox:
            name = k.replies.listed_peer_name(env.address)
            if name is not None:
                return name
    return None


class StubSession:
    """One scripted model behind one loopback port."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec
        converser = Converser(name=spec.name, api=spec.api, resolve_peer=listed_peer_name,
                              id_base=int(time.time() * 1000))
        self.converser = converser
        self.state = ScriptState(converser=converser)
        self.requests: list[RecordedRequest] = []
        self.changed = asyncio.Condition()
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.releases = 0  # bumped by POST /sessions/{name}/release: every hold then in progress ends

    def release(self) -> None:
        """End every hold in progress now (its reply follows at once): a test that made the client
        busy for longer than it needed ends the turn instead of waiting it out."""
        self.releases += 1

    @property
    def info(self) -> SessionInfo:
        base = f"http://{HOST}:{self.port}"
        return SessionInfo(
            name=self.spec.name,
            api=self.spec.api,
            port=self.port,
            base_url=base + apis.api(self.spec.api).BASE_PATH,
        )

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, HOST, 0, reuse_address=True)
        await site.start()
        self.port = int(self.runner.addresses[0][1])

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    async def _record(self, rec: RecordedRequest) -> None:
        async with self.changed:
            self.requests.append(rec)
            self.changed.notify_all()

    async def _touch(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one client request: side requests at once, main ones from the script."""
        raw = await request.read()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        mod = apis.api(self.spec.api)
        reason = mod.side_reason(request.method, request.path, body)
        last = mod.last_input(body) if isinstance(body, dict) else LastInput()
        if reason is None:
            reply = self.state.answer(last)
            if reply.tool is not None:
                reply = reply.model_copy(update={"tool": self.converser.completed(reply.tool)})
        else:
            reply = Reply(text=mod.SIDE_TEXT, answered_by=f"side: {reason}")
        rec = RecordedRequest(
            seq=len(self.requests),
            session=self.spec.name,
            time=time.time(),
            method=request.method,
            path=request.path,
            query=request.query_string,
            headers={k.lower(): v for k, v in request.headers.items() if k.lower() not in HIDDEN_HEADERS},
            body=body,
            kind="main" if reason is None else "side",
            side_reason=reason,
            last_text=last.text,
            tool_result=last.tool_result,
            answered_by=reply.answered_by,
            reply_text=reply.text,
            reply_tool=reply.tool.name if reply.tool else None,
            hold=reply.hold,
        )
        await self._record(rec)
        model = mod.model(request.path, body)
        print(
            f"stub {self.spec.name} {self.spec.api} {request.method} {request.path} "
            f"{rec.kind}{'(' + reason + ')' if reason else ''} model={model} by={reply.answered_by!r} "
            f"hold={reply.hold:g} tool={rec.reply_tool} last={'[tool] ' if last.tool_result else ''}"
            f"{' '.join(last.text.split())[:60]!r}",
            file=sys.stderr,
            flush=True,
        )
        done = False
        try:
            resp, done = await mod.respond(request, body, reason, reply, model, self._released_since())
        except Exception as exc:  # a stub bug must be loud, not a silently hung client
            print(f"stub {self.spec.name} request {rec.seq} FAILED: {exc!r}", file=sys.stderr, flush=True)
            raise
        finally:
            rec.finished = time.time()
            rec.outcome = "ok" if done else "aborted"
            if not done:
                print(f"stub {self.spec.name} request {rec.seq} aborted by the client", file=sys.stderr, flush=True)
            await self._touch()
        return resp

    def _released_since(self) -> Callable[[], bool]:
        """True once `release` is called after this point."""
        seen = self.releases
        return lambda: self.releases != seen


def _err(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    return f"invalid {where}: {first.get('msg', 'bad value')}"


class StubServer:
    """All sessions plus the control API that adds, scripts and inspects them."""

    def __init__(self) -> None:
        self.sessions: dict[str, StubSession] = {}
        self._control: web.AppRunner | None = None
        self.control_path: str | None = None
        self._lock = asyncio.Lock()

    # --- sessions -------------------------------------------------------------------------

    async def add_session(self, spec: SessionSpec) -> SessionInfo:
        async with self._lock:
            if spec.name in self.sessions:
                raise KeyError(spec.name)
            sess = StubSession(spec)
            await sess.start()
            self.sessions[spec.name] = sess
        print(f"stub session {spec.name} ({spec.api}) on {sess.info.base_url}", file=sys.stderr, flush=True)
        return sess.info

    async def remove_session(self, name: str) -> bool:
        async with self._lock:
            sess = self.sessions.pop(name, None)
        if sess is None:
            return False
        await sess.stop()
        return True

    # --- control API ------------------------------------------------------------------------

    def control_app(self) -> web.Application:
        app = web.Application()
        r = app.router
        r.add_get("/health", self._health)
        r.add_get("/sessions", self._list)
        r.add_post("/sessions", self._add)
        r.add_get("/sessions/{name}", self._get)
        r.add_delete("/sessions/{name}", self._delete)
        r.add_get("/sessions/{name}/script", self._get_script)
        r.add_put("/sessions/{name}/script", self._put_script)
        r.add_post("/sessions/{name}/rules", self._add_rule)
        r.add_post("/sessions/{name}/default", self._set_default)
        r.add_get("/sessions/{name}/requests", self._requests)
        r.add_delete("/sessions/{name}/requests", self._clear_requests)
        r.add_post("/sessions/{name}/release", self._release)
        return app

    def _session(self, request: web.Request) -> StubSession:
        name = request.match_info["name"]
        sess = self.sessions.get(name)
        if sess is None:
            raise web.HTTPNotFound(
                text=json.dumps({"error": f"no stub session {name!r}; add it with POST /sessions"}),
                content_type="application/json",
            )
        return sess

    @staticmethod
    async def _json(request: web.Request) -> Any:
        try:
            return await request.json()
        except ValueError as exc:
            raise web.HTTPBadRequest(
                text=json.dumps({"error": f"body is not JSON: {exc}"}), content_type="application/json"
            ) from exc

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "pid": os.getpid(), "sessions": len(self.sessions)})

    async def _list(self, request: web.Request) -> web.Response:
        return web.json_response([s.info.model_dump() for s in self.sessions.values()])

    async def _add(self, request: web.Request) -> web.Response:
        try:
            spec = SessionSpec.model_validate(await self._json(request))
        except ValidationError as exc:
            return _err(400, _validation_message(exc))
        try:
            info = await self.add_session(spec)
        except KeyError:
            return _err(409, f"stub session {spec.name!r} already exists; DELETE it first")
        except OSError as exc:
            return _err(500, f"could not listen on {HOST}: {exc}")
        return web.json_response(info.model_dump(), status=201)

    async def _get(self, request: web.Request) -> web.Response:
        return web.json_response(self._session(request).info.model_dump())

    async def _delete(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if not await self.remove_session(name):
            return _err(404, f"no stub session {name!r}")
        return web.json_response({"deleted": name})

    async def _get_script(self, request: web.Request) -> web.Response:
        return web.json_response(self._session(request).state.snapshot())

    async def _put_script(self, request: web.Request) -> web.Response:
        sess = self._session(request)
        try:
            script = Script.model_validate(await self._json(request))
        except ValidationError as exc:
            return _err(400, _validation_message(exc))
        sess.state.replace(script)
        return web.json_response(sess.state.snapshot())

    async def _add_rule(self, request: web.Request) -> web.Response:
        sess = self._session(request)
        try:
            rule = Rule.model_validate(await self._json(request))
        except ValidationError as exc:
            return _err(400, _validation_message(exc))
        return web.json_response(sess.state.add_rule(rule).model_dump(), status=201)

    async def _set_default(self, request: web.Request) -> web.Response:
        sess = self._session(request)
        try:
            d = DefaultText.model_validate(await self._json(request))
        except ValidationError as exc:
            return _err(400, _validation_message(exc))
        sess.state.set_default(d.text)
        return web.json_response({"default": d.text})

    async def _requests(self, request: web.Request) -> web.Response:
        """Recorded requests; `?min=N&timeout=S` long-polls until N are there (or S passes),
        `kind=main|side` filters, `body=0` leaves the (large) bodies out."""
        sess = self._session(request)
        q = request.query
        try:
            want = int(q.get("min", "0"))
            timeout = min(float(q.get("timeout", "0")), 600.0)
        except ValueError:
            return _err(400, "min must be an integer and timeout a number")
        kind = q.get("kind")
        with_body = q.get("body", "1") not in ("0", "false", "no")

        def pick() -> list[RecordedRequest]:
            return [r for r in sess.requests if kind is None or r.kind == kind]

        if want and len(pick()) < want and timeout > 0:
            async with sess.changed:
                try:
                    await asyncio.wait_for(sess.changed.wait_for(lambda: len(pick()) >= want), timeout)
                except TimeoutError:
                    pass
        exclude = None if with_body else {"body"}
        return web.json_response([r.model_dump(exclude=exclude) for r in pick()])

    async def _release(self, request: web.Request) -> web.Response:
        self._session(request).release()
        return web.json_response({"released": True})

    async def _clear_requests(self, request: web.Request) -> web.Response:
        sess = self._session(request)
        n = len(sess.requests)
        sess.requests.clear()
        return web.json_response({"cleared": n})

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self, control_path: str) -> None:
        """Listen on the control socket; refuse to steal a live one, clear a stale one."""
        path = os.path.abspath(control_path)
        if os.path.exists(path):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
            except OSError:
                os.unlink(path)
            else:
                raise OSError(f"control socket {path} is live: another stub server owns it")
            finally:
                probe.close()
        self._control = web.AppRunner(self.control_app(), access_log=None, shutdown_timeout=1.0, handle_signals=False)
        await self._control.setup()
        await web.UnixSite(self._control, path).start()
        os.chmod(path, 0o600)
        self.control_path = path

    async def close(self) -> None:
        for name in list(self.sessions):
            await self.remove_session(name)
        if self._control is not None:
            await self._control.cleanup()
            self._control = None
        if self.control_path and os.path.exists(self.control_path):
            os.unlink(self.control_path)


def write_ready(path: str, ready: Ready) -> None:
    """Write the ready file atomically: readers see nothing or the whole JSON."""
    path = os.path.abspath(path)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(ready.model_dump_json())
    os.replace(tmp, path)


async def serve(control: str, ready_file: str | None = None, stop: asyncio.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT (or `stop` is set), then close every site and the socket."""
    import signal

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    server = StubServer()
    await server.start(control)
    try:
        if ready_file:
            write_ready(ready_file, Ready(pid=os.getpid(), control=server.control_path or control))
        print(f"stub control listening on {server.control_path} (pid {os.getpid()})", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await server.close()
        if ready_file and os.path.exists(ready_file):
            os.unlink(ready_file)
        print("stub server stopped", file=sys.stderr, flush=True)
