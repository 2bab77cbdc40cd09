"""MCP servers the editor passes in `session/new`, `session/load` and `session/resume`
(docs/mcp.md).

`specs` reads the editor's entries and names the tools for the model, without the `mcp` SDK;
`servers.McpServers` runs one session's servers and offers their tools (which
`acp_fsm.tools.mcp` wraps as the model's tools); `connection` uses the SDK, which is imported
only when a session has servers.
"""
