"""`relay mcp`: a stdio MCP server that lets an agent answer the operator from inside its sandbox.

Why: Codex's default `workspace-write` sandbox refuses AF_UNIX and loopback
connects (measured: EPERM), so a sandboxed Codex agent cannot run `relay reply`
(it writes to the operator's inbox socket). Codex and Claude Code start MCP
servers themselves, outside the sandbox, so a tool call on this server reaches
the inbox where a shell command cannot.

Four tools (their bodies: session/mcp/mcp_tools.py; the last two: session/core/asking.py):
- `relay_reply(relay_id, text)` does exactly what `relay reply` does
  (session/core/reply.py): the same ledger check (only ids the operator sent), hop + 1,
  the `re=` link when the envelope supports it, and relay-halt.
- `relay_requests()` is read-only: the relay messages the operator sent TO THE
  CALLING SESSION that ask for a reply or ack and have none yet, so the agent can
  see what it was asked. The caller is the session that started this server,
  established as strongly as the evidence allows (agents.origin: a Claude
  session's own pid; of a shared Codex daemon's threads, the one whose rollout
  holds the call in flight); when it cannot be established, nothing is listed
  and the answer says why (issue 16 case 1: a peer must not read another's asks).

Why the protocol is written here and not taken from the MCP Python SDK (`mcp`), which this
server used until issue 17: `import mcp` pulls its client, its pydantic models, httpx and
starlette, so the SDK server needed 1.1-1.2 s wall and 1.3-1.4 CPU-s to answer `initialize`
(load ~1.5; 1.7-3.5 s at load 4). Every agent configured with this server pays that at its own
start, and Codex gives a server 10 s (`startup_timeout_sec`) before it drops its tools (the
suspected cause of a lab Codex thread's relay_reply never coming beside two CPU burners). What a
server needs of MCP on stdio is small: newline-delimited JSON-RPC 2.0 (core/jsonrpc.py,
system/stdio_rpc.py) and five methods (initialize, ping, tools/list, tools/call, and notifications ignored). Written by hand on
the standard library (`python -m bench.mcp_start`, 5 runs, load 3.7-5.3): `initialize` answered
in 0.08-0.10 s wall (median) and 0.04 CPU-s, against the SDK's 0.9-2.2 s and 1.1 CPU-s run in
turn; the first tool call then loads the tools (0.2-0.5 s); nothing heavy is imported before it.
Claude Code connects it in 0.6-1.4 s instead of 2.3-4.3 s (its `server/discover` probe now gets an
answer at once; adapters/claude-code.md). The SDK's server also published an outputSchema
(`{"result": string}`) and a structuredContent copy of the text; neither carried anything the
text does not, so the tools answer text only. The tests keep the SDK's own client as an
independent check that this is MCP (tests/session/test_mcp_server.py).

Errors, as the MCP specification (2025-11-25) sorts them: a tool that refuses (an id the operator
did not send, relay-halt, arguments of the wrong shape) answers a result with `isError: true` and
one line the model can act on; an unknown tool or a malformed call is a JSON-RPC error (-32602).
"""

from __future__ import annotations

from typing import Any

from relay_repl import __version__
from relay_repl.core.errors import JsonRpcError, RelayError, describe
from relay_repl.core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from relay_repl.core.mcp_names import MCP_TOOL

SERVER_NAME = "relay"
REQUESTS_TOOL = "relay_requests"

# The handshake versions this server speaks (all share initialize, tools/list, tools/call as used
# here); a client asking for another gets the latest, and decides itself whether to go on.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]

# The stateless revision (2026-07-28: no initialize; every request names its version in
# params._meta; `server/discover` instead of the handshake) is not spoken here: answering its probe
# would switch an auto-negotiating client (Claude Code's stdio default, MCP_PROTOCOL_NEGOTIATION=auto)
# to a protocol relay has not been checked against live. So a client of that era gets ONE JSON-RPC
# error that names the revisions this server speaks: the probe a Method-not-found (which Claude
# reads as "legacy, go on with initialize"), a request carrying a version we do not speak the spec's
# UnsupportedProtocolVersionError (-32004, data.supported), never a silent answer of another era.
META_VERSION = "io.modelcontextprotocol/protocolVersion"
UNSUPPORTED_PROTOCOL_VERSION = -32004
SPOKEN = (f"relay mcp speaks MCP {', '.join(PROTOCOL_VERSIONS)} (the initialize handshake), not the stateless "
          "2026-07-28 revision: send initialize first")

INSTRUCTIONS = (
    "Relay lets the operator send you one-line messages of the form "
    "`[relay/1 from=... to=... id=<relay id> hop=<k> want=<reply|ack|none>] <body>`. "
    "When such a message asks want=reply or want=ack, answer it with the relay_reply tool "
    "(relay_id = the id= value, text = your one-line answer). relay_requests lists the open requests "
    "addressed to you. To start an exchange with another agent, call relay_send (held for the operator's "
    "approval; relay_request_status reads its state). "
    "Never answer a message that carries relay-halt or an id you have already answered."
)

# Names, descriptions and input schemas exactly as the SDK-built server published them, so a
# client that cached the tools sees no change.
TOOLS: list[dict[str, Any]] = [
    {
        "name": MCP_TOOL,
        "description": (
            "Answer a relay message from the operator into the operator's relay inbox. relay_id is the id= "
            "value of the message you answer (exactly as written); text is your one-line answer. Works inside "
            "a sandbox that forbids sockets. Refused for ids the operator did not send, past the hop cap, or "
            "while relay-halt is in force."),
        "inputSchema": {
            "properties": {"relay_id": {"title": "Relay Id", "type": "string"},
                           "text": {"title": "Text", "type": "string"}},
            "required": ["relay_id", "text"],
            "type": "object",
            "title": "relay_replyArguments",
        },
    },
    {
        "name": REQUESTS_TOOL,
        "description": (
            "List the relay messages the operator sent to you that ask for a reply or ack and have none yet "
            "(read-only). Each has relay_id, target, want, hop and the exact payload; when relay cannot tell "
            "which session you are, none are listed and `why` says so."),
        "inputSchema": {"properties": {}, "type": "object", "title": "relay_requestsArguments"},
    },
]
SEND_TOOL = "relay_send"
STATUS_TOOL = "relay_request_status"
# An agent starts an exchange too (issue 31): it asks, the operator decides (session/core/asking.py).
TOOLS += [
    {
        "name": SEND_TOOL,
        "description": (
            "Ask the operator's relay to send a one-line message to another agent session. Nothing is sent by "
            "this call: the request is held for the operator's approval (the answer names the request id); the "
            "operator sees a plan and says y or N. to = the target (kind:name, as relay "
            "targets lists them); body = the one line; want = reply (default), ack or none. With want=reply "
            "the receiver's answer comes back to you as a relay message carrying re=<request id>. Refused when "
            "relay cannot establish which session you are."),
        "inputSchema": {
            "properties": {"to": {"title": "To", "type": "string"},
                           "body": {"title": "Body", "type": "string"},
                           "want": {"title": "Want", "type": "string", "enum": ["reply", "ack", "none"],
                                    "default": "reply"}},
            "required": ["to", "body"],
            "type": "object",
            "title": "relay_sendArguments",
        },
    },
    {
        "name": STATUS_TOOL,
        "description": (
            "The state of a request you made with relay_send (read-only): held, approved, denied (why), expired, "
            "then the delivery's own states (queued, in_turn, delivered, failed), with each step's time. Only "
            "the session that asked may read it."),
        "inputSchema": {
            "properties": {"request": {"title": "Request", "type": "string"}},
            "required": ["request"],
            "type": "object",
            "title": "relay_request_statusArguments",
        },
    },
]
_SCHEMAS = {t["name"]: t["inputSchema"] for t in TOOLS}


def initialize(params: Any) -> dict[str, Any]:
    """The handshake: the client's protocol version when we speak it, else our latest."""
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: initialize needs params.protocolVersion (a string)")
    asked = params["protocolVersion"]
    return {
        "protocolVersion": asked if asked in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
        "instructions": INSTRUCTIONS,
    }


def server_discover(params: Any) -> dict[str, Any]:
    """The stateless revision's probe: one error naming what this server speaks (see SPOKEN)."""
    raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: server/discover; {SPOKEN}",
                       {"method": "server/discover", "supported": list(PROTOCOL_VERSIONS)})


def era_checked(handler: Any) -> Any:
    """`handler`, refusing a request whose params._meta names a protocol version this server does
    not speak (a stateless-era client that sent no initialize) with UnsupportedProtocolVersionError."""

    def checked(params: Any) -> Any:
        meta = params.get("_meta") if isinstance(params, dict) else None
        asked = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if asked is not None and asked not in PROTOCOL_VERSIONS:
            shown = asked if isinstance(asked, str) else json_type(asked)
            raise JsonRpcError(UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version {shown[:40]}: {SPOKEN}",
                               {"supported": list(PROTOCOL_VERSIONS), "requested": asked if isinstance(asked, str) else None})
        return handler(params)

    return checked


def json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), "a value of another type")


def ping(params: Any) -> dict[str, Any]:
    return {}


def tools_list(params: Any) -> dict[str, Any]:
    """Both tools, in one page (no cursor: there are two)."""
    return {"tools": TOOLS}


def tools_call(params: Any) -> dict[str, Any]:
    """Run one tool. Imports the tools' module (pydantic, the ledger) on the first call only."""
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: tools/call needs params.name (a string)")
    name = params["name"]
    args = params.get("arguments")
    if args is None:
        args = {}
    if name not in _SCHEMAS:
        raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name}")
    if not isinstance(args, dict):
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: tools/call arguments must be an object")
    wrong = _argument_errors(_SCHEMAS[name], args)
    if wrong:
        return _tool_error(name, f"invalid arguments: {'; '.join(wrong)}")
    from relay_repl.session.mcp import mcp_tools

    try:
        if name == MCP_TOOL:
            try:
                text = mcp_tools.relay_reply(args["relay_id"], args["text"])
            except RelayError as exc:
                return _tool_error(name, f"not sent: {exc}")
        elif name in (SEND_TOOL, STATUS_TOOL):
            try:
                text = (mcp_tools.relay_send(args["to"], args["body"], args.get("want", "reply")) if name == SEND_TOOL
                        else mcp_tools.relay_request_status(args["request"]))
            except RelayError as exc:
                return _tool_error(name, str(exc))
        else:
            text = mcp_tools.relay_requests()
    except Exception as exc:  # the tool failed: the model gets one line, not a protocol error
        return _tool_error(name, describe(exc, f"running {name}"))
    return {"content": [{"type": "text", "text": text}], "isError": False}


def _argument_errors(schema: dict[str, Any], args: dict[str, Any]) -> list[str]:
    """What is wrong with `args` against one of TOOLS' flat schemas (required keys, string types)."""
    wrong = [f"{key} is required" for key in schema.get("required", ()) if key not in args]
    for key, spec in schema["properties"].items():
        if key in args and spec.get("type") == "string" and not isinstance(args[key], str):
            wrong.append(f"{key} must be a string, not {type(args[key]).__name__}")
        elif key in args and "enum" in spec and args[key] not in spec["enum"]:
            wrong.append(f"{key} must be one of {', '.join(spec['enum'])}")
    return wrong


def _tool_error(name: str, message: str) -> dict[str, Any]:
    """A tool's refusal as the model sees it (the wording the SDK-built server used)."""
    return {"content": [{"type": "text", "text": f"Error executing tool {name}: {message}"}], "isError": True}


HANDLERS = {"initialize": initialize, "server/discover": server_discover, "ping": era_checked(ping),
            "tools/list": era_checked(tools_list), "tools/call": era_checked(tools_call)}


def serve() -> int:
    """Run on stdin/stdout until the client closes them. Nothing else may write stdout."""
    from relay_repl.system import mcp_answered
    from relay_repl.system.stdio_rpc import StdioRpcServer

    # with RELAY_MCP_ANSWERED_DIR set (the lab), each method's first answer is recorded for the lab's
    # readiness check: a client that queues prompts until its MCP discovery ends (Gemini CLI) is ready
    # once tools/list, the last request of that discovery here (tools only), has its answer
    return StdioRpcServer(HANDLERS, slow={"tools/call"}, answered=mcp_answered.record).serve()
