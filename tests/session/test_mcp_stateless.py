"""`relay mcp` and a client of the stateless MCP revision 2026-07-28 (issue 32, a field hazard).

Such a client sends no `initialize`: it probes with `server/discover` (Claude Code's stdio
default, and MCP_PROTOCOL_NEGOTIATION=auto) and names its version in every request's
params._meta. relay mcp speaks the handshake revisions only (session/mcp/mcp_server.py says why), so
each such request gets ONE JSON-RPC error that names the revisions it speaks, never a result of
another era and never silence; the same client falling back to `initialize` is then served.
The client's lines are a hand-made capture (captures/mcp-2026-07-28-client.jsonl), replayed to
the real `relay mcp` process."""

from __future__ import annotations

import json
from pathlib import Path

from relay_repl.session.mcp.mcp_server import PROTOCOL_VERSIONS
from tests.support.mcp_pipe import McpPipe, init_params

CAPTURE = Path(__file__).parent / "captures" / "mcp-2026-07-28-client.jsonl"


def test_a_stateless_client_gets_one_error_naming_the_revisions_then_its_fallback_is_served():
    mcp = McpPipe()
    try:
        for line in CAPTURE.read_text().splitlines():
            sent = json.loads(line)
            mcp.send(line)
            got = mcp.recv()
            assert got["id"] == sent["id"] and "result" not in got, got
            err = got["error"]
            assert err["data"]["supported"] == list(PROTOCOL_VERSIONS), err
            assert "2026-07-28" in err["message"] and "send initialize first" in err["message"], err
            if sent["method"] == "server/discover":  # the probe: Method not found means "legacy" to Claude Code
                assert err["code"] == -32601
            else:  # UnsupportedProtocolVersionError (the revision's own code), with what was asked
                assert err["code"] == -32004 and err["data"]["requested"] == "2026-07-28", err
        # the fallback: the handshake, then the same requests are answered
        assert mcp.ask(10, "initialize", init_params("2025-11-25"))["result"]["protocolVersion"] == "2025-11-25"
        assert [t["name"] for t in mcp.ask(11, "tools/list", {})["result"]["tools"]] == [
            "relay_reply", "relay_requests", "relay_send", "relay_request_status"]
        legacy_meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25", "progressToken": 1}}
        assert "tools" in mcp.ask(12, "tools/list", legacy_meta)["result"]  # a spoken version in _meta is fine
        bad = mcp.ask(13, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": {"x": 1}}})
        assert bad["error"]["code"] == -32004 and bad["error"]["data"]["requested"] is None
    finally:
        assert mcp.close() == 0
    assert "Traceback" not in mcp.stderr_text()
