"""`relay mcp`: the stdio MCP server (mcp_server, standard library only until a tool is called)
and its tools (mcp_tools). Imports only the core below it (pyproject: contract "session-parts").
"""
