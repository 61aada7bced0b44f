"""`relay serve --stdio`: this machine's relay, answering another relay over an ssh channel.

Why stdio and not a port: ssh already authenticated the caller and carries the bytes;
no listening surface, no daemon. One JSON request per line in, one JSON answer per line
out (core/serve_wire.py), in order; the process lives as long as the channel.

Discovery here is this host's (its registries, its /proc): the caller only relays it.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

import anyio

from relay_repl import __version__
from relay_repl.core.errors import ProtocolMismatch, RelayError, UsageError
from relay_repl.core.serve_lines import MAX_LINE, PROTOCOL_VERSION, answer_json, mismatch, plain_request

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
Answer = dict[str, Any]
"""An answer's fields (`id`, `ok`, and `result`, `error`, `error_kind` or `ask`), written by `answer_line`."""


def answer_line(ans: Answer) -> bytes:
    """The line of `Answer(**ans)` (core/serve_wire.py): as plain JSON when it is (core/serve_lines.py),
    so a first answer builds no model (issue 33); through the model otherwise."""
    plain = answer_json(**ans)
    if plain is not None:
        return plain
    from relay_repl.core.serve_wire import Answer as AnswerModel

    return AnswerModel(**ans).model_dump_json().encode()


def target_json(t) -> dict:
    """A target as `relay targets --json` prints it and the channel carries it."""
    return {
        "kind": t.kind, "prefix": t.prefix, "name": t.name, "spec": t.spec, "address": t.address, "pid": t.pid,
        "live": t.live, "state": t.state, "pane": t.pane, "transports": list(t.transports),
        "identified_by": t.identified_by, "client_version": t.client_version, "client_status": t.client_status,
        "detail": t.detail, "host": t.host,
    }


class ChannelGate:
    """This host's gate when the operator is at the other end of the channel: the plan goes up
    as an interim answer, and only the digest of that very plan, approved there, says yes here.
    The approval is still minted by this process's own gate (session/core/gate.py `ask`), single-use
    and spent when the delivery ends, exactly as for a local send."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.current: int | None = None  # the request id of the send being served

    async def __call__(self, plan: Any) -> bool:
        from relay_repl.core.approval import plan_digest

        if self.current is None:
            return False  # nothing on the channel is asking: No
        digest = plan_digest(plan)
        got = await self.server.ask(self.current, {"plan": plan.model_dump(mode="json"), "digest": digest})
        return got is not None and got.get("digest") == digest


class Server:
    """The ops one relay answers for another. Each returns a JSON-able result or raises a
    RelayError, whose one line goes back as the answer's error."""

    def __init__(self, make_session: Callable[..., Any], write: Callable[[Answer], Awaitable[None]] | None = None,
                 extra_targets: tuple[Any, ...] = (), soon: Callable[[str, dict[str, str]], None] | None = None) -> None:
        self.ops: dict[str, Handler] = {"hello": self.hello, "targets": self.targets, "send": self.send,
                                        "wait_reply": self.wait_reply, "halt": self.halt, "evidence": self.evidence,
                                        "requests": self.requests, "request_state": self.request_state}
        self.write = write
        self._asks: dict[int, Any] = {}  # request id -> memory stream the `approve` answer arrives on
        self.session: Any = None
        self.gate = ChannelGate(self)
        self._tg: Any = None
        self.closed = False
        self._make = make_session  # the session factory, handed down by the front end (session.app.make_session):
        # this module sits in remote/, below the facade and app (pyproject contract "session-parts")
        self.extra_targets = extra_targets  # `relay --fake serve`: the in-memory fake:inbox its session holds
        self._soon = soon  # the front end's: what a send's reply route asks first, started before the session exists

    async def hello(self, args: dict[str, Any]) -> dict[str, Any]:
        theirs = args.get("protocol")
        if theirs != PROTOCOL_VERSION:
            raise ProtocolMismatch(mismatch(theirs, who="the calling relay"))
        return {"protocol": PROTOCOL_VERSION, "relay": __version__, "pid": os.getpid(),
                "hostname": socket.gethostname()}

    async def targets(self, args: dict[str, Any]) -> list[dict]:
        from relay_repl.agents import default_providers
        from relay_repl.agents.discovery import discover_all

        found = [*await discover_all(list(default_providers())), *self.extra_targets]
        return [target_json(t) for t in found]

    # ---- the session: plans built, gated (over the channel) and carried out here ---------

    async def _session(self) -> Any:
        """This host's session, made on the first send: its transports, its ledger, its inbox
        (opened in the serve task group, so replies to its sends land here and are judged here)."""
        if self.session is None:
            session = self._make(approve=self.gate, echo=lambda line: print(line, file=sys.stderr, flush=True))
            session.asks.forwarding = True  # this host's agents' requests are decided by the operator over the channel
            await session.open_inbox(self._tg, echo=lambda line: None)
            self.session = session
        return self.session

    async def send(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.session is None and self._soon is not None and (args.get("want") or "none") != "none":
            try:  # the first send on this channel: its reply route's first question runs beside the session's imports
                self._soon(str(args.get("target") or ""), dict(os.environ))
            except Exception:  # noqa: BLE001 - only a head start: the models ask it themselves
                pass
        session = await self._session()
        if args.get("re"):  # the answer to an agent's request here, taken back to it (its `re=`)
            from relay_repl.session.core.sendoptions import SendOptions

            d = await session.sender.send(str(args["target"]), str(args["body"]), SendOptions(
                want=args.get("want") or "none", transport=args.get("transport"),
                timeout=float(args.get("timeout") or 30.0), reply_via=args.get("reply_via"),
                hop=int(args.get("hop") or 0), relay_id=args.get("relay_id"), heading=args.get("heading"),
                re=str(args["re"])))
            return d.model_dump(mode="json")
        d = await session.send(str(args["target"]), str(args["body"]), want=args.get("want") or "none",
                               transport=args.get("transport"), timeout=float(args.get("timeout") or 30.0),
                               reply_via=args.get("reply_via"), hop=int(args.get("hop") or 0),
                               relay_id=args.get("relay_id"), heading=args.get("heading"))
        return d.model_dump(mode="json")

    async def wait_reply(self, args: dict[str, Any]) -> dict[str, Any]:
        """The answer to one of this host's deliveries, judged by this host's inbox (kernel pid)."""
        session = await self._session()
        d = session.shared.find_delivery(str(args["relay_id"]))
        msg = await d.wait_reply(float(args.get("timeout") or 60.0))
        return {"message": msg.model_dump(mode="json") if msg is not None else None,
                "judged_on": socket.gethostname(), "serve_pid": os.getpid()}

    # ---- this host's agents' requests (issue 31): held here for the operator's relay, decided there ----

    async def requests(self, args: dict[str, Any]) -> dict[str, Any]:
        """The requests this host's agents made that are held, oldest first, for the operator's relay to
        take (it holds them in its own ledger and decides them there). The first call opens this host's
        session, so its inbox: from then on, while the channel lives, its agents' relay_send reach it.
        A relay-halt in force here is said too (a halt anywhere halts every held request)."""
        session = await self._session()
        halt = session.shared.ledger.active_halt()
        inbox = session.inbox_server
        return {"held": [r.model_dump(mode="json") for r in session.asks.store.held()],
                "host": socket.gethostname(), "inbox": str(inbox.path) if inbox is not None else None,
                "halt": {"reason": halt.reason, "by": halt.by} if halt is not None else None}

    async def request_state(self, args: dict[str, Any]) -> dict[str, Any]:
        """The operator's relay writes a request's state into this host's copy (its asker reads it here,
        with relay_request_status): only the state and its steps, never who asked or what."""
        from relay_repl.core.host_requests import host_update
        from relay_repl.core.request import DECIDED, Request
        from relay_repl.store.ledger import Ledger
        from relay_repl.store.requests import RequestStore

        rid = str(args.get("id") or "")
        led = Ledger.default()
        try:
            store = RequestStore(led)
            kept = store.get(rid)
            if kept is None:
                raise UsageError(f"no request {rid!r} on {socket.gethostname()}")
            sent = args.get("update")
            update = host_update(sent if isinstance(sent, dict) else {})
            if kept.state in DECIDED and update.get("state", kept.state) == "held":
                raise UsageError(f"request {rid} is {kept.state} here: a decided request is never held again")
            try:
                moved = Request.model_validate({**kept.model_dump(mode="json"), **update})
            except ValueError as exc:
                raise UsageError(f"request {rid}: the state sent is not a request's state "
                                 f"({str(exc).splitlines()[0]})") from None
            store.save(moved)
            return {"id": rid, "state": moved.state}
        finally:
            led.close()

    async def evidence(self, args: dict[str, Any]) -> dict[str, Any]:
        """What this host's ledger holds for one relay id, read before any re-send from the other
        side: was it approved here, how far it got, how many times the id went out."""
        from relay_repl.store.ledger import Ledger

        rid = str(args["relay_id"])
        led = Ledger.default()
        try:
            events = led.events(relay_id=rid)
            outcomes = [e.data for e in events if e.kind == "outcome"]
            stages = [e.kind for e in events if e.kind.startswith("stage")]
            return {"relay_id": rid, "host": socket.gethostname(), "serve_pid": os.getpid(),
                    "planned": any(e.kind == "plan" for e in events),
                    "approved": any(e.kind == "answer" and e.data.get("approved") for e in events),
                    "state": outcomes[-1].get("state") if outcomes else None,
                    "stage": outcomes[-1].get("stage") if outcomes else (stages[-1] if stages else None),
                    "sent": led.sightings(rid, "sent")}
        finally:
            led.close()

    async def halt(self, args: dict[str, Any]) -> dict[str, Any]:
        from relay_repl.store.ledger import Ledger

        led = Ledger.default()
        try:
            led.halt(str(args.get("reason") or "operator halt"), by=str(args.get("by") or "operator over ssh"))
        finally:
            led.close()
        return {"halted": True, "host": socket.gethostname()}

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close_inbox()

    # ---- asking the operator over the channel ------------------------------------------

    async def ask(self, rid: int, question: dict[str, Any]) -> dict[str, Any] | None:
        if self.write is None or self.closed:
            return None
        send, recv = anyio.create_memory_object_stream[dict](1)
        self._asks[rid] = send
        try:
            await self.write({"id": rid, "ok": True, "ask": question})
            with anyio.move_on_after(ASK_TIMEOUT):
                try:
                    return await recv.receive()
                except anyio.EndOfStream:
                    return None
            return None
        finally:
            self._asks.pop(rid, None)
            send.close()
            recv.close()

    def approve(self, rid: int, args: dict[str, Any]) -> None:
        stream = self._asks.get(rid)
        if stream is not None:
            try:
                stream.send_nowait(dict(args))
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    def channel_closed(self) -> None:
        """EOF: nobody can answer a pending question any more, so each is a No."""
        self.closed = True
        for stream in list(self._asks.values()):
            stream.close()

    # ---- answering ------------------------------------------------------------------

    async def answer(self, line: bytes) -> Answer:
        import json

        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # a nesting bomb is garbage
            return {"id": None, "ok": False, "error": "not a JSON line", "error_kind": "UsageError"}
        if isinstance(data, dict) and data.get("v") != PROTOCOL_VERSION:
            return {"id": data.get("id") if isinstance(data.get("id"), int) else None, "ok": False,
                    "error": mismatch(data.get("v"), who="the calling relay"), "error_kind": "ProtocolMismatch"}
        req: Any = plain_request(data)
        if req is None:  # not plainly a request: the model decides, and says why
            from relay_repl.core.serve_wire import Request

            try:
                req = Request.model_validate(data)
            except ValueError as exc:
                return {"id": None, "ok": False, "error": f"malformed request: {str(exc).splitlines()[0]}",
                        "error_kind": "UsageError"}
        op = self.ops.get(req.op)
        if op is None:
            return {"id": req.id, "ok": False, "error": f"unknown op {req.op!r}", "error_kind": "UsageError"}
        try:
            if req.op in SESSION_OPS:
                self.gate.current = req.id
            return {"id": req.id, "ok": True, "result": await op(req.args)}
        except RelayError as exc:
            return {"id": req.id, "ok": False, "error": str(exc), "error_kind": type(exc).__name__}


SESSION_OPS = {"send"}
ASK_TIMEOUT = 900.0


async def serve(stdin: BinaryIO | None, stdout: BinaryIO | None, server: Server) -> None:
    """Answer requests until the channel closes (EOF on stdin). Requests are handled as they
    come (an `approve` must reach a send that is waiting for it); each answer is one line."""
    import json

    src = stdin or sys.stdin.buffer
    out = stdout or sys.stdout.buffer
    lock = anyio.Lock()

    async def write(ans: Answer) -> None:
        async with lock:
            try:
                out.write(answer_line(ans) + b"\n")
                out.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the channel is gone: the ledger here still has what happened

    server.write = write

    pending = 0  # requests being answered: EOF ends the channel, not the answers already asked for
    idle = anyio.Event()

    async def handle(line: bytes, awaited: bool) -> None:
        nonlocal pending
        try:
            await write(await server.answer(line))
        finally:
            pending -= awaited
            if pending == 0:
                idle.set()

    async with anyio.create_task_group() as tg:
        server._tg = tg
        while True:
            line = await anyio.to_thread.run_sync(src.readline, MAX_LINE, abandon_on_cancel=True)
            if not line:
                break
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except (ValueError, RecursionError):  # a nesting bomb is garbage
                data = None
            if isinstance(data, dict) and data.get("op") == "approve" and data.get("v") == PROTOCOL_VERSION \
                    and isinstance(data.get("id"), int):
                server.approve(data["id"], data.get("args") or {})
                continue
            # a wait_reply is waiting on an agent, not answering: EOF still ends it at once
            awaited = not (isinstance(data, dict) and data.get("op") == "wait_reply")
            if awaited and pending == 0:
                idle = anyio.Event()  # set when this one and any after it are answered
            pending += awaited  # counted before it starts, so an EOF right after still waits for it
            tg.start_soon(handle, line, awaited)
        server.channel_closed()
        if pending:
            with anyio.move_on_after(ASK_TIMEOUT):  # a discovery that awaits a thread still answers
                await idle.wait()
        await server.aclose()  # running sends end as they would have; then the inbox closes
        tg.cancel_scope.cancel()


def run_stdio(make_session: Callable[..., Any], fake: bool = False,
              soon: Callable[[str, dict[str, str]], None] | None = None) -> int:
    """`relay serve --stdio`; with `relay --fake serve --stdio` its session holds the in-memory
    fake:inbox target too, as `relay --fake send` does. `make_session` builds this host's session on
    the first op that needs one (the front end hands down session.app's, imported then: a hello
    loads no session). `soon(target, env)`: the front end's head start for a send's reply route."""
    if sys.stdin.isatty():
        raise UsageError("relay serve --stdio answers another relay over ssh; it is not for a terminal")
    from relay_repl.session.core.asking import refuse_inside_agent

    # Its ops list and rewrite agents' requests and approve its own sends: the operator's acts, never an
    # agent's (an agent piping `request_state` into it could un-deny a request or deny another's).
    refuse_inside_agent("relay serve --stdio")
    make: Callable[..., Any] = make_session
    extra: tuple[Any, ...] = ()
    if fake:
        from functools import partial

        from relay_repl.transports.fake import fake_target

        make, extra = partial(make_session, fake=True), (fake_target(),)
    anyio.run(lambda: serve(None, None, server=Server(make, extra_targets=extra, soon=soon)))
    return 0
