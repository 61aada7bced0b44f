"""The name of relay's MCP reply tool, in one place.

The relay MCP server (`relay mcp`, session/mcp/mcp_server.py) publishes it; an agent package reads a
client's approval settings for it (agents/codex/replies.py); the lab's converser calls it
(lab/stubs/converse.py). Here, in the bottom layer and with no imports, because `relay mcp` must
answer `initialize` before anything heavy is loaded (tests/session/test_mcp_protocol.py: not
pydantic, not relay_repl.agents), so it cannot import it from an agent module.
"""

MCP_TOOL = "relay_reply"
